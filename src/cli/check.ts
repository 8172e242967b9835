// `abuse-intel check [--snapshot FILE] [--json] IP... | -`: the IP detail record (contract 5.1) of each address,
// offline, from a snapshot or the local data directory, computed by the same code as the server's lookups.
// `-` streams addresses from stdin, one per line, any number: each is answered as it is read.

import { resolveConfig } from "../config";
import { AppError } from "../domain/errors";
import { tryParseIp, type Ip } from "../domain/ip";
import type { IpDetail, Reputation } from "../services/lookups/reputation";
import { hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command, SCORING_FLAGS, SCORING_HELP } from "./command";

const HELP = [
  "Usage: abuse-intel check [--snapshot FILE] [--json] IP... | -",
  "",
  "Prints the reputation of each address (the record GET /v1/ip/{ip} answers) without a server:",
  "from a snapshot (--snapshot FILE; answers as of the snapshot's creation time) or from the data",
  "directory (read-only; the same answers a server on it gives).",
  "",
  "  -                      read addresses from stdin, one per line (blank lines and # comments skipped,",
  "                         surrounding spaces ignored), answered as they arrive",
  "  --json                 one JSON object per line: the detail record, or for an invalid address",
  '                         {"success":false,"input","error","code":"bad_request"}',
  "  --snapshot FILE        read this snapshot instead of the data directory (env ABUSE_INTEL_SNAPSHOT)",
  "  --geo-mmdb FILE        MaxMind-format database adding cities (env ABUSE_INTEL_GEO_MMDB)",
  SCORING_HELP,
  DATA_DIR_HELP,
  "",
  "Without --json: a table. Exit status 0, or 1 when an input was not a valid address (the others are answered).",
].join("\n");

export const checkCommand: Command = {
  name: "check",
  summary: "look up addresses offline, from a snapshot or the data directory",
  help: HELP,
  async run(argv) {
    const args = parseArgs(argv, {
      values: ["--snapshot", "--data-dir", "--geo-mmdb", ...SCORING_FLAGS],
      switches: ["--json"],
    });
    if (args.positionals.length === 0) throw new AppError("bad_request", `check needs addresses, or - to read them from stdin\n\n${HELP}`);
    const config = resolveConfig(args.flags);
    const { openLookupSource } = await import("../services/snapshots/sources");
    // Addresses given as arguments are known up front: only their rows are read, not the whole index. A
    // stream (-) can ask for anything: the whole pre-built index is loaded.
    const only = args.positionals.includes("-") ? undefined : args.positionals.map(tryParseIp).filter((ip): ip is Ip => typeof ip !== "string");
    const source = await openLookupSource(config, { snapshot: config.snapshot, needGeo: true, only });
    try {
      return await runCheck(source.reputation, args.positionals, { json: hasSwitch(args, "--json") });
    } catch (error) {
      // The reader went away (`check - | head`): stop quietly, as command-line filters do.
      if ((error as NodeJS.ErrnoException).code === "EPIPE") return 0;
      throw error;
    } finally {
      source.close();
    }
  },
};

/** Output is handed to stdout in blocks of about this size; a slow reader (a pipe) holds the loop back. */
const FLUSH_BYTES = 64 * 1024;

/** Where the answers go: lines are buffered; `drain` waits while the reader is behind. */
export interface Output {
  line(text: string): void;
  drain(): Promise<void>;
  end(): Promise<void>;
}

function stdoutOutput(): Output {
  const sink = Bun.stdout.writer({ highWaterMark: FLUSH_BYTES });
  let pending = 0;
  return {
    line(text) {
      sink.write(text + "\n");
      pending += text.length + 1;
    },
    async drain() {
      if (pending < FLUSH_BYTES) return;
      pending = 0;
      await sink.flush();
    },
    async end() {
      await sink.flush();
    },
  };
}

const COLUMNS: [string, number][] = [
  ["IP", 24],
  ["SCORE", 5],
  ["THREAT", 8],
  ["REPORTS", 7],
  ["VERIFIED", 8],
  ["COUNTRY", 7],
  ["ASN", 8],
  ["LAST SEEN", 24],
  ["ALLOWLISTED", 11],
  ["CATEGORIES", 24],
  ["ISP", 0],
];
const NUMERIC = new Set(["SCORE", "REPORTS", "VERIFIED"]);

function tableRow(cells: string[]): string {
  return cells
    .map((cell, i) => {
      const [name, width] = COLUMNS[i];
      if (i === cells.length - 1) return cell;
      return NUMERIC.has(name) ? cell.padStart(width) : cell.padEnd(width);
    })
    .join("  ");
}

function tableLine(d: IpDetail): string {
  return tableRow([
    d.ip,
    String(d.reputationScore),
    d.threatLevel,
    String(d.reports),
    String(d.verifiedReports),
    d.countryCode ?? "-",
    d.asn === null ? "-" : `AS${d.asn}`,
    d.lastSeen ?? "-",
    d.isAllowlisted ? "yes" : "no",
    d.categories.length > 0 ? d.categories.join(",") : "-",
    d.isp ?? "-",
  ]);
}

/**
 * Answers each input in order (`-` streams stdin in place); returns the exit status. Invalid inputs are
 * reported (a JSON error line, or a message on stderr) and do not stop the others. Lookups are synchronous;
 * the loop only waits for input to arrive and for the output to drain, a block at a time.
 */
export async function runCheck(reputation: Reputation, inputs: string[], options: { json: boolean; output?: Output; stdin?: ReadableStream<Uint8Array> }): Promise<number> {
  const out = options.output ?? stdoutOutput();
  let invalid = 0;
  const answer = (input: string) => {
    const ip = tryParseIp(input);
    if (typeof ip === "string") {
      invalid++;
      const error = `"${input}" is not a valid IP address: ${ip}`;
      if (options.json) out.line(JSON.stringify({ success: false, input, error, code: "bad_request" }));
      else console.error(`abuse-intel check: ${error}`);
      return;
    }
    const detail = reputation.detail(ip);
    out.line(options.json ? JSON.stringify(detail) : tableLine(detail));
  };
  if (!options.json) out.line(tableRow(COLUMNS.map(([name]) => name)));
  for (const input of inputs) {
    if (input !== "-") {
      answer(input);
      continue;
    }
    for await (const block of lineBlocks(options.stdin ?? Bun.stdin.stream())) {
      for (const line of block) {
        const text = line.trim();
        if (text !== "" && !text.startsWith("#")) answer(text);
      }
      await out.drain();
    }
  }
  await out.end();
  return invalid > 0 ? 1 : 0;
}

/** The lines of a byte stream as they arrive, a block (the complete lines of a chunk) at a time. */
export async function* lineBlocks(stream: ReadableStream<Uint8Array>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of stream) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
    rest = lines.pop()!;
    if (lines.length > 0) yield lines;
  }
  rest += decoder.decode();
  if (rest !== "") yield [rest];
}
