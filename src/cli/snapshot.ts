// `abuse-intel snapshot export|info|verify|keygen` (contract section 8). The work lives in
// src/services/snapshots/export.ts, loaded when a subcommand runs so the command table stays cheap to load.

import { resolveConfig, scoringParametersOf } from "../config";
import { AppError } from "../domain/errors";
import { flag, hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command, SCORING_FLAGS, SCORING_HELP } from "./command";

const HELP = [
  "Usage: abuse-intel snapshot <export|info|verify|keygen> [options]",
  "",
  "  snapshot export --out FILE [--sign-key KEYFILE]",
  "      Writes one SQLite file with what lookups and blocklists need (addresses with scores, allowlist,",
  "      enrichment ranges, threats, listed networks, the pre-built index) and never users, keys, webhooks,",
  "      emails or report texts. Safe while the server runs: the data is read in one transaction. FILE may be an",
  "      earlier snapshot (it is replaced), never another existing file or the data directory's database.",
  "  snapshot info FILE [--json]",
  "      What the snapshot holds: creation time, source instance, counts, scoring, hash, signature.",
  "  snapshot verify FILE [--pubkey KEYFILE] [--json]",
  "      Recomputes the SHA-256 of the content (any change fails) and, with --pubkey, checks the Ed25519",
  "      signature (an unsigned snapshot or another key fails). Exit 0 when it holds, 1 with the reason.",
  "  snapshot keygen --out PREFIX",
  "      Makes an Ed25519 key pair: PREFIX.key (PKCS#8 PEM, mode 0600, for --sign-key) and PREFIX.pub",
  "      (SPKI PEM, for --pubkey). Key files may also hold the base64 of the raw 32-byte key.",
  "",
  "Use a snapshot with `abuse-intel check --snapshot FILE`, `abuse-intel blocklist --snapshot FILE` and",
  "`abuse-intel serve --snapshot FILE --api-key KEY`.",
  "",
  DATA_DIR_HELP,
  SCORING_HELP,
].join("\n");

export const snapshotCommand: Command = {
  name: "snapshot",
  summary: "export, inspect and verify snapshots for offline use; make signing keys",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    switch (sub) {
      case "export":
        return exportCommand(rest);
      case "info":
        return infoCommand(rest);
      case "verify":
        return verifyCommand(rest);
      case "keygen":
        return keygenCommand(rest);
      default:
        throw new AppError("bad_request", `snapshot takes export, info, verify or keygen\n\n${HELP}`);
    }
  },
};

function oneFile(positionals: string[], sub: string): string {
  if (positionals.length !== 1) throw new AppError("bad_request", `snapshot ${sub} takes one FILE`);
  return positionals[0];
}

async function exportCommand(argv: string[]): Promise<number> {
  const args = parseArgs(argv, { values: ["--out", "--sign-key", "--data-dir", ...SCORING_FLAGS] });
  if (args.positionals.length > 0) throw new AppError("bad_request", `snapshot export takes no arguments (the file is --out FILE)`);
  const out = flag(args, "--out");
  if (out === undefined) throw new AppError("bad_request", "snapshot export needs --out FILE");
  const config = resolveConfig(args.flags);
  const [{ exportSnapshot, snapshotInfo }, { openEnrichment }, { databasePath, openStore }, { existsSync }, { checkNotTheDatabase, checkOutputPath }] = await Promise.all([
    import("../services/snapshots/export"),
    import("../services/enrichment/enrichment"),
    import("../store/database"),
    import("node:fs"),
    import("./output-file"),
  ]);
  checkOutputPath(out);
  checkNotTheDatabase(out, config.dataDir);
  // A snapshot (what `snapshot info` reads) may replace the previous one under the same name (a daily export to
  // latest.sqlite); anything else is left alone, as a backup leaves every existing file.
  const isSnapshot = (file: string) => {
    try {
      snapshotInfo(file);
      return true;
    } catch {
      return false;
    }
  };
  if (existsSync(out) && !isSnapshot(out)) throw new AppError("conflict", `${out} exists and is not a snapshot: choose another name`);
  if (!existsSync(databasePath(config.dataDir))) throw new AppError("not_found", `no database in ${config.dataDir} (give --data-dir)`);
  const store = openStore(config.dataDir, { sync: config.syncMode });
  try {
    // Beside a running server on the same data directory: its lookups first, every thread (issue 29).
    (await import("../services/background-priority")).yieldProcessCpuToServers();
    const enrichment = await openEnrichment({ dataDir: config.dataDir });
    const result = await exportSnapshot({
      store,
      enrichment,
      scoring: scoringParametersOf(config),
      out,
      signKey: flag(args, "--sign-key"),
      nowMs: Date.now(),
    });
    console.log(
      `wrote ${result.file}: ${result.counts.addresses.toLocaleString("en-US")} addresses, ${megabytes(result.bytes)}, ` +
        `sha256 ${result.sha256}${result.signed ? `, signed with key ${result.keyId}` : ", unsigned"} (${result.durationMs} ms)`,
    );
    return 0;
  } finally {
    store.close();
  }
}

async function infoCommand(argv: string[]): Promise<number> {
  const args = parseArgs(argv, { switches: ["--json"] });
  const file = oneFile(args.positionals, "info");
  const { snapshotInfo } = await import("../services/snapshots/export");
  const info = snapshotInfo(file);
  if (hasSwitch(args, "--json")) {
    console.log(JSON.stringify(info, null, 2));
    return 0;
  }
  const n = (v: number) => v.toLocaleString("en-US");
  const s = info.scoring;
  const lines: [string, string][] = [
    ["file", `${info.file} (${megabytes(info.bytes)})`],
    ["format", `${info.formatVersion}${info.productVersion ? ` (written by abuse-intel ${info.productVersion})` : ""}`],
    ["created", `${info.createdAt} (${age(Date.now() - info.createdAtMs)}); lookups answer as of this time`],
    ["source instance", info.sourceInstance],
    ["addresses", n(info.counts.addresses)],
    ["allowlist", `${n(info.counts.allowlist)} networks`],
    ["threats", n(info.counts.threats)],
    ["feeds", `${n(info.counts.feeds)} (${n(info.counts.networks)} entries)`],
    ["range tables", n(info.counts.rangeTables)],
    [
      "scoring",
      s
        ? `half-life ${s.halfLifeDays} d, retention ${s.retentionDays} d, risk LOW ≥ ${s.riskThresholds.low}, MEDIUM ≥ ${s.riskThresholds.medium}, HIGH ≥ ${s.riskThresholds.high}`
        : "(not recorded)",
    ],
    ["content sha256", info.sha256 ?? "(none)"],
    ["signature", info.signed ? `Ed25519, key ${info.signatureKeyId ?? "(unknown)"} (check it with snapshot verify --pubkey)` : "none"],
  ];
  for (const [label, value] of lines) console.log(`${label.padEnd(16)} ${value}`);
  return 0;
}

async function verifyCommand(argv: string[]): Promise<number> {
  const args = parseArgs(argv, { values: ["--pubkey"], switches: ["--json"] });
  const file = oneFile(args.positionals, "verify");
  const { verifySnapshot } = await import("../services/snapshots/export");
  // An edge verifies each snapshot it pulls with this command while it answers lookups (issue 29).
  (await import("../services/background-priority")).yieldProcessCpuToServers();
  const result = verifySnapshot(file, flag(args, "--pubkey"));
  if (hasSwitch(args, "--json")) {
    console.log(JSON.stringify(result, null, 2));
    return result.ok ? 0 : 1;
  }
  if (!result.ok) {
    for (const problem of result.problems) console.error(`FAILED: ${file}: ${problem}`);
    return 1;
  }
  const signature =
    result.signatureValid === true
      ? `signature valid (key ${result.signatureKeyId})`
      : result.signed
        ? `signed by key ${result.signatureKeyId}, signature not checked (give --pubkey)`
        : "not signed";
  console.log(`OK: ${file}: content matches sha256 ${result.computedSha256}; ${signature}`);
  return 0;
}

async function keygenCommand(argv: string[]): Promise<number> {
  const args = parseArgs(argv, { values: ["--out"] });
  const prefix = flag(args, "--out") ?? args.positionals[0];
  if (prefix === undefined) throw new AppError("bad_request", "snapshot keygen needs --out PREFIX");
  const [{ writeKeyPair }, { checkOutputPath }] = await Promise.all([import("../services/snapshots/signing"), import("./output-file")]);
  checkOutputPath(`${prefix}.key`);
  const { privatePath, publicPath, keyId } = writeKeyPair(prefix);
  console.log(`wrote ${privatePath} (private, mode 0600: give it to snapshot export --sign-key)`);
  console.log(`wrote ${publicPath} (public: give it to snapshot verify --pubkey)`);
  console.log(`key id ${keyId}`);
  return 0;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function age(ms: number): string {
  if (ms < 0) return "in the future";
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}
