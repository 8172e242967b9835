// `abuse-intel import`: bulk loads into the data directory. `import reports FILE --reporter EMAIL` takes the
// AbuseIPDB bulk-report CSV (see src/services/reports/import.ts for what is read and how). A running server on the
// same data directory notices the commit and picks the changes up by itself.

import { UserTable } from "../store/users";
import { OPTIONS, resolveConfig, scoringParametersOf } from "../config";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { isSeverity, type Severity } from "../domain/scoring";
import { type ImportPhase, importReportStream } from "../services/reports/import";
import { openStore } from "../store/database";
import { flag, hasSwitch, parseArgs } from "./args";
import { parseCategory } from "../domain/categories";
import { parseFeedName, parseFeedSeverity } from "../domain/feeds";
import { oneShotBlocklistImport, scorerWithStoredListings } from "../app/feed-services";
import { DATA_DIR_HELP, type Command, SCORING_FLAGS, SCORING_HELP } from "./command";
import { inputFile } from "./input-file";
import { indexFilePath, refreshIndexFile } from "../services/changes/persisted-index";
import type { RiskThresholds } from "../domain/risk";
import type { Store } from "../store/database";
import { type ProgressBar, progressBar } from "./progress";
import { yieldProcessCpuToServers } from "../services/background-priority";

const PARSE_ON_A_WORKER_FROM_BYTES = 8 * 1024 * 1024;

/** Bad rows listed one by one; past this many only their count is printed. */
const MAX_BAD_ROWS_LISTED = 1_000;

const REPORTS_HELP = [
  "Usage: abuse-intel import reports FILE --reporter EMAIL [--severity N] [--data-dir DIR]",
  "",
  "Imports an AbuseIPDB bulk-report CSV (IP,Categories,ReportDate,Comment; the header line is optional; FILE - reads",
  "stdin). Categories are AbuseIPDB numbers or category names, several in one quoted field; each category of a row",
  "becomes one report. ReportDate is ISO 8601 with an offset (2026-11-21T08:00:00Z) and is kept, so old reports",
  "count less. Bad rows (future dates, dates past retention, unknown categories, addresses that cannot be",
  "reported) are listed with their line numbers and skipped; the good rows are stored in one transaction: nothing",
  "is stored unless the whole file is. The file is read a piece at a time, so memory does not grow with it; on a",
  "terminal a progress bar shows the rows read (with the rate and the time left), then the addresses rescored.",
  "Imported reports have no 15-minute duplicate rule, earn no credits and send no webhook events.",
  "",
  "  --reporter EMAIL      the account the reports are attributed to (it must exist)",
  "  --severity N          severity 1-5 of every imported report (default 3)",
  SCORING_HELP,
  DATA_DIR_HELP,
].join("\n");

const BLOCKLIST_HELP = [
  "Usage: abuse-intel import blocklist FILE --source NAME --category C [--severity N] [--replace] [--data-dir DIR]",
  "",
  "Imports a list as FireHOL (.netset/.ipset), Spamhaus (DROP, EDROP, DROPv6: `CIDR ; SBLnnn`, or the JSON lines)",
  "and blocklist.de publish it: one address or CIDR a line, # and ; comments (FILE - reads stdin). Each entry counts",
  "like a verified report of the severity from the reporter feed:NAME; a network is listed as one line on every",
  "blocklist, and addresses inside it show it under `networks` in their detail record. Bad lines are listed with",
  "their line numbers and skipped. With --replace the feed's previous entries are swapped for these atomically (a",
  "list with no valid entry is then refused and nothing changes); without it the entries are added.",
  "",
  "  --source NAME         the feed's name (letters, digits, . _ -)",
  "  --category C          the category of every entry (e.g. SPAM, BRUTE_FORCE)",
  "  --severity N          severity 1-5 (default 4)",
  "  --replace             replace the feed's entries instead of adding to them",
  SCORING_HELP,
  DATA_DIR_HELP,
].join("\n");

const SUBCOMMANDS: Record<string, { help: string; run(argv: string[]): Promise<number> }> = {
  reports: { help: REPORTS_HELP, run: importReportsCommand },
  blocklist: { help: BLOCKLIST_HELP, run: importBlocklistCommand },
};

export const importCommand: Command = {
  name: "import",
  summary: "import reports from an AbuseIPDB bulk-report CSV, or a blocklist (FireHOL, Spamhaus, blocklist.de)",
  help: [
    "Usage: abuse-intel import <what> FILE [options]",
    "",
    "  reports FILE --reporter EMAIL                 an AbuseIPDB bulk-report CSV",
    "  blocklist FILE --source NAME --category C     a list of addresses and networks under a feed's name",
    "",
    REPORTS_HELP,
    "",
    BLOCKLIST_HELP,
  ].join("\n"),
  async run(argv) {
    const [what, ...rest] = argv;
    const sub = what === undefined ? undefined : SUBCOMMANDS[what];
    if (!sub) throw new AppError("bad_request", `import takes one of: ${Object.keys(SUBCOMMANDS).join(", ")}${what === undefined ? "" : ` (got "${what}")`}`);
    return sub.run(rest);
  },
};

const CONFIG_FLAGS = OPTIONS.filter((o) => ["--data-dir", ...SCORING_FLAGS].includes(o.flag)).map((o) => o.flag);

async function importReportsCommand(argv: string[]): Promise<number> {
  const args = parseArgs(argv, { values: ["--reporter", "--severity", ...CONFIG_FLAGS] });
  if (args.positionals.length !== 1) throw new AppError("bad_request", "import reports takes one FILE (or - for stdin)");
  const email = flag(args, "--reporter");
  if (email === undefined || email.trim() === "") throw new AppError("bad_request", "--reporter EMAIL is required");
  let severity: Severity = 3;
  const rawSeverity = flag(args, "--severity");
  if (rawSeverity !== undefined) {
    const n = Number(rawSeverity);
    if (!/^\d$/.test(rawSeverity) || !isSeverity(n)) throw new AppError("bad_request", `--severity must be an integer 1-5, got "${rawSeverity}"`);
    severity = n;
  }
  const config = resolveConfig(args.flags);
  const params = scoringParametersOf(config);
  // Beside a running server on the same data directory: its lookups first, every thread (issue 29).
  yieldProcessCpuToServers();

  const file = args.positionals[0];
  const input = file === "-" ? { stream: Bun.stdin.stream(), size: null } : openFile(file);

  const store = openStore(config.dataDir, { sync: config.syncMode });
  try {
    const userId = new UserTable(store).idOfEmailAnyCase(email.trim());
    if (userId === null) throw new AppError("not_found", `no account with the email ${email.trim()} (create it with abuse-intel user add)`);

    const read = { bytes: 0 };
    const progress = process.stderr.isTTY ? importProgress(input.size, read) : null;
    let listed = 0;
    const summary = await importReportStream(
      { store, scorer: scorerWithStoredListings(store, params), params },
      textPieces(input.stream, read),
      {
        reporterId: userId,
        nowMs: systemClock.now(),
        params,
        severity,
        // A thread of its own for parsing pays off once the file is large (or of unknown size: stdin).
        parseWorker: input.size === null || input.size >= PARSE_ON_A_WORKER_FROM_BYTES,
        onBadRow: (b) => {
          if (++listed > MAX_BAD_ROWS_LISTED) return;
          const line = `line ${b.line}: ${b.reason}`;
          if (progress) progress.note(line);
          else console.error(line);
        },
        onProgress: progress?.update,
      },
    );
    progress?.done();
    if (summary.badRows > MAX_BAD_ROWS_LISTED) console.error(`… and ${summary.badRows - MAX_BAD_ROWS_LISTED} more bad rows`);
    console.log(
      `imported ${summary.reports} report${summary.reports === 1 ? "" : "s"} from ${summary.rows} row${summary.rows === 1 ? "" : "s"} ` +
        `(${summary.addresses} address${summary.addresses === 1 ? "" : "es"} rescored); ` +
        `skipped ${summary.badRows} bad row${summary.badRows === 1 ? "" : "s"}`,
    );
    if (summary.addresses > 0) writeIndexFile(store, params.riskThresholds, indexFilePath(config.dataDir));
    // Nothing good in a file that had rows is a failure a script should notice.
    return summary.rows === 0 && summary.badRows > 0 ? 1 : 0;
  } finally {
    store.close();
  }
}

/**
 * The index file written after the import, so the next `serve` starts as fast as later ones (it would rebuild the
 * index from the table otherwise: the import changed more addresses than a start replays). The import is
 * committed either way: a failure here only costs the next start its rebuild.
 */
function writeIndexFile(store: Store, thresholds: RiskThresholds, path: string): void {
  try {
    const written = refreshIndexFile(store, thresholds, path);
    if (written === null) return;
    const { addresses, bytes, ms, reason } = written;
    console.log(`index: wrote ${path} (${addresses} addresses, ${Math.round(bytes / 1048576)} MB) in ${Math.round(ms)} ms, for the next start (${reason})`);
  } catch (error) {
    console.error(`index: ${path} not written (the next start rebuilds the index): ${error instanceof Error ? error.message : String(error)}`);
  }
}

function openFile(path: string): { stream: ReadableStream<Uint8Array>; size: number } {
  const file = inputFile(path);
  return { stream: file.stream(), size: file.size };
}

/** The stream as UTF-8 text pieces (a character split between chunks is kept whole), counting the bytes read. */
async function* textPieces(stream: ReadableStream<Uint8Array>, read: { bytes: number }): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8");
  for await (const chunk of stream) {
    read.bytes += chunk.byteLength;
    yield decoder.decode(chunk, { stream: true });
  }
  const rest = decoder.decode();
  if (rest !== "") yield rest;
}

/**
 * The progress of `import reports` on a terminal, one bar per phase: rows (the total estimated from the bytes
 * read so far when the file's size is known, so the bar has a time left), addresses rescored, indexes built.
 */
function importProgress(size: number | null, read: { bytes: number }) {
  let phase: ImportPhase | null = null;
  let bar: ProgressBar | null = null;
  const units: Record<ImportPhase, string> = { rows: "rows", addresses: "addresses rescored", indexes: "indexes built" };
  return {
    update(next: ImportPhase, done: number, total: number | null) {
      if (next !== phase) {
        bar?.done();
        phase = next;
        bar = progressBar(units[next]);
      }
      if (next === "rows" && total === null && size !== null && read.bytes > 0) total = Math.max(done, Math.round((done * size) / read.bytes));
      bar!.update(done, total);
    },
    note(line: string) {
      if (bar) bar.note(line);
      else process.stderr.write(`${line}\n`);
    },
    done() {
      bar?.done();
    },
  };
}

async function importBlocklistCommand(argv: string[]): Promise<number> {
  const args = parseArgs(argv, { values: ["--source", "--category", "--severity", ...CONFIG_FLAGS], switches: ["--replace"] });
  if (args.positionals.length !== 1) throw new AppError("bad_request", "import blocklist takes one FILE (or - for stdin)");
  const source = parseFeedName(flag(args, "--source"), "--source");
  const category = parseCategory(flag(args, "--category"), "--category");
  const severity = parseFeedSeverity(flag(args, "--severity"), "--severity");
  const config = resolveConfig(args.flags);
  // Beside a running server on the same data directory: its lookups first, every thread (issue 29).
  yieldProcessCpuToServers();
  const file = args.positionals[0];
  const text = file === "-" ? await Bun.stdin.text() : await inputFile(file).text();

  const store = openStore(config.dataDir, { sync: config.syncMode });
  try {
    const importOnce = oneShotBlocklistImport(store, config, systemClock);
    const totalLines = countLines(text);
    const bar = process.stderr.isTTY ? progressBar("lines") : null;
    const result = importOnce(source, text, { category, severity, replace: hasSwitch(args, "--replace") }, bar ? (n) => bar.update(n, totalLines) : undefined);
    bar?.update(totalLines, totalLines);
    bar?.done();
    for (const e of result.errors) console.error(`line ${e.line}: ${e.error}`);
    if (result.badLines > result.errors.length) console.error(`… and ${result.badLines - result.errors.length} more bad lines`);
    console.log(
      `imported ${result.imported} entr${result.imported === 1 ? "y" : "ies"} into feed ${source} from ${result.lines} lines ` +
        `(${result.entries} listed now, ${result.rescored} reported address${result.rescored === 1 ? "" : "es"} rescored); ` +
        `skipped ${result.badLines} bad line${result.badLines === 1 ? "" : "s"}`,
    );
    return result.imported === 0 && result.badLines > 0 ? 1 : 0;
  } finally {
    store.close();
  }
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  return text.length > 0 && !text.endsWith("\n") ? n + 1 : n;
}
