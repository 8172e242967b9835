// `abuse-intel blocklist [--snapshot FILE] [--category C] [--risk LEVEL] [--ip-version 4|6] [--format F]`: a
// blocklist (contract 5.10) on stdout with no server, from a snapshot or the local data directory. The same
// selection and rendering functions as GET /v1/ip/blocklist, so the bytes are the API's, except `generatedAt`
// (json) and the header comment's time (nft, ipset): the time of generation, or `--generated-at`.

import { resolveConfig } from "../config";
import { AppError } from "../domain/errors";
import { flag, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command, SCORING_FLAGS, SCORING_HELP } from "./command";

const HELP = [
  "Usage: abuse-intel blocklist [--snapshot FILE] [--category C] [--risk LEVEL] [--ip-version 4|6] [--format F]",
  "",
  "Writes a blocklist to stdout without a server, from a snapshot or the data directory (read-only):",
  "the same bytes GET /v1/ip/blocklist answers for the same data and parameters.",
  "",
  "  --category C           one category or a comma list (repeatable); an address matches any of them",
  "  --risk LEVEL           minimum risk level: LOW, MEDIUM (default), HIGH, CRITICAL",
  "  --ip-version 4|6       one family (default both)",
  "  --format F             json (default), txt, cidr, nft, ipset, csv",
  "  --generated-at TIME    the time printed as generatedAt (ISO 8601; default now)",
  "  --snapshot FILE        read this snapshot instead of the data directory (env ABUSE_INTEL_SNAPSHOT)",
  SCORING_HELP,
  DATA_DIR_HELP,
].join("\n");

export const blocklistCommand: Command = {
  name: "blocklist",
  summary: "write a blocklist to stdout offline, from a snapshot or the data directory",
  help: HELP,
  async run(argv) {
    const args = parseArgs(argv, {
      values: ["--snapshot", "--data-dir", "--category", "--risk", "--ip-version", "--format", "--generated-at", ...SCORING_FLAGS],
    });
    if (args.positionals.length > 0) throw new AppError("bad_request", `blocklist takes no arguments, got "${args.positionals[0]}"`);
    const generatedAt = flag(args, "--generated-at");
    const generatedAtMs = generatedAt === undefined ? Date.now() : Date.parse(generatedAt);
    if (Number.isNaN(generatedAtMs)) throw new AppError("bad_request", `--generated-at must be an ISO 8601 time, got "${generatedAt}"`);
    const categories = args.flags.get("--category");
    const [{ parseBlocklistParams }, { createRenderer, renderChunks }, { selectBlocklist, selectionCursor, needsDetails }] = await Promise.all([
      import("../domain/blocklist/query"),
      import("../domain/blocklist/formats"),
      import("../services/blocklists/blocklist"),
    ]);
    // The API's parser, so the same values are accepted and refused with the same messages.
    const { filters, format } = parseBlocklistParams({
      category: categories === undefined ? undefined : categories.length === 1 ? categories[0] : categories,
      riskLevel: flag(args, "--risk"),
      ipVersion: flag(args, "--ip-version"),
      format: flag(args, "--format"),
    });
    const config = resolveConfig(args.flags);
    const { openLookupSource } = await import("../services/snapshots/sources");
    const source = await openLookupSource(config, { snapshot: config.snapshot, needGeo: false });
    try {
      // As the API does before a list: addresses whose reports passed retention are rescored first.
      source.reputation.expireDue();
      const selection = selectBlocklist(source.index, source.allowlist.set, filters, { details: needsDetails(format) });
      const renderer = createRenderer(format, { generatedAtMs, count: selection.count, filters }, selectionCursor(selection));
      const sink = Bun.stdout.writer({ highWaterMark: 256 * 1024 });
      for (const chunk of renderChunks(renderer, 256 * 1024)) {
        sink.write(chunk);
        await sink.flush();
      }
      await sink.end();
      return 0;
    } catch (error) {
      // The reader went away (`blocklist | head`): stop quietly, as command-line filters do.
      if ((error as NodeJS.ErrnoException).code === "EPIPE") return 0;
      throw error;
    } finally {
      source.close();
    }
  },
};
