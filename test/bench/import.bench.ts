// Benchmark of `abuse-intel import reports` (issue 16): a 1 M-row AbuseIPDB bulk-report CSV (IP,Categories,
// ReportDate,Comment; mostly distinct IPv4 addresses, a tenth IPv6, one to three categories a row, dates in the
// last 300 days) imported by the real CLI as a separate process, three rounds on fresh data directories, each
// round's wall time and peak RSS (GNU time's %M when /usr/bin/time exists, else VmHWM polled every 50 ms).
// Targets per round: <= 15 s and <= 400 MB. Ceiling measured in the same run: the same reports inserted raw into
// the same `reports` table (a migrated store, same WAL and synchronous=FULL) by bun:sqlite in one transaction,
// the way the import wrote them before it streamed; the import's time is printed as a ratio to it.
// The CLI is `bun src/main.ts`, or build/out/abuse-intel with --binary (or BENCH_BINARY=PATH).
// Run: npx bun test/bench/import.bench.ts [--rows N] [--rounds R] [--binary] [--keep DIR]

import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Category, categoryFromAbuseIpdb } from "../../src/domain/categories";
import { formatIpv4, formatIpv6 } from "../../src/domain/ip";
import { openStore } from "../../src/store/database";
import { rng } from "../support/random";
import { ensureExecutable } from "./support/executable";

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const ROWS = Number(arg("--rows") ?? 1_000_000);
const ROUNDS = Number(arg("--rounds") ?? 3);
const TARGET_S = 15;
const TARGET_MB = 400;
const REPORTER = "importer@example.test";

const root = join(import.meta.dir, "../..");
const binary = process.env.BENCH_BINARY || (process.argv.includes("--binary") ? ensureExecutable() : null);
const cli = binary ? [binary] : [process.execPath, join(root, "src/main.ts")];
if (binary && !existsSync(binary)) {
  console.error(`no executable at ${binary} (run npm run build first)`);
  process.exit(2);
}
const dir = arg("--keep") ?? mkdtempSync(join(tmpdir(), "abuse-intel-importbench-"));
mkdirSync(dir, { recursive: true });
const results: [string, boolean][] = [];
const fmt = (x: number, digits = 1) => x.toFixed(digits);

// ---------------------------------------------------------------------------------------------------------
// The file: the same rows every run.

interface Row {
  ip: string;
  version: 4 | 6;
  numbers: number[];
  dateMs: number;
  comment: string;
}

const NOW = Date.now();
const CATEGORY_NUMBERS = [3, 4, 5, 7, 9, 10, 11, 14, 15, 18, 19, 20, 21, 22, 23];

function* benchRows(): Generator<Row> {
  const next = rng(0x1f2e3d4c);
  for (let i = 0; i < ROWS; i++) {
    let ip: string;
    let version: 4 | 6 = 4;
    if (i % 10 === 9) {
      ip = formatIpv6([0x2a00 | (next() & 0xff), next() & 0xffff, next() & 0xffff, next() & 0xffff, 0, 0, next() & 0xffff, next() & 0xffff]);
      version = 6;
    } else {
      let v = next();
      while (v >>> 24 === 0 || v >>> 24 === 127 || v >>> 24 >= 224) v = next();
      ip = formatIpv4(v);
    }
    const numbers = Array.from({ length: 1 + (next() % 3) }, () => CATEGORY_NUMBERS[next() % CATEGORY_NUMBERS.length]);
    // Whole seconds in the last 300 days, a minute before the run starts.
    const dateMs = Math.floor((NOW - 60_000) / 1000) * 1000 - (next() % (300 * 86_400)) * 1000;
    yield { ip, version, numbers, dateMs, comment: `${numbers.includes(18) ? "SSH brute force" : "Port scan"} from ${ip}, seen by the honeypot` };
  }
}

/** The reports the import makes of a row: its categories mapped to ours, duplicates dropped. */
function categoriesOf(row: Row): Category[] {
  const out: Category[] = [];
  for (const n of row.numbers) {
    const c = categoryFromAbuseIpdb(n)!;
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

const csvPath = join(dir, "reports.csv");
let expectedReports = 0;
{
  const started = performance.now();
  const writer = Bun.file(csvPath).writer();
  writer.write("IP,Categories,ReportDate,Comment\n");
  let chunk = "";
  for (const row of benchRows()) {
    expectedReports += categoriesOf(row).length;
    const date = new Date(row.dateMs).toISOString().replace(".000Z", "+00:00");
    chunk += `${row.ip},"${row.numbers.join(",")}",${date},"${row.comment}"\n`;
    if (chunk.length > 1 << 20) {
      writer.write(chunk);
      chunk = "";
    }
  }
  writer.write(chunk);
  await writer.end();
  const mb = Bun.file(csvPath).size / 1024 / 1024;
  console.log(`# import benchmark: ${ROWS.toLocaleString("en")} rows (${fmt(mb)} MiB, ${expectedReports.toLocaleString("en")} reports) written in ${fmt((performance.now() - started) / 1000)} s; CLI ${binary ?? "bun src/main.ts"}; ${ROUNDS} rounds`);
}

// A data directory with the reporter's account, copied for every round.
const template = join(dir, "template");
rmSync(template, { recursive: true, force: true });
{
  const made = Bun.spawnSync([...cli, "user", "add", "--email", REPORTER, "--tier", "free", "--data-dir", template], { stdout: "pipe", stderr: "pipe" });
  if (made.exitCode !== 0) throw new Error(`user add: ${made.stderr.toString()}`);
}

// ---------------------------------------------------------------------------------------------------------
// The ceiling: the same reports inserted raw, one transaction, into a fresh migrated store.

function ceiling(): number {
  const dataDir = join(dir, "ceiling");
  rmSync(dataDir, { recursive: true, force: true });
  cpSync(template, dataDir, { recursive: true });
  const store = openStore(dataDir);
  const reporterId = (store.sqlite.query("SELECT id FROM users WHERE email = ?").get(REPORTER) as { id: number }).id;
  const insert = store.sqlite.prepare(
    `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, evidence, status, source, created_at, status_changed_at)
     VALUES (?, ?, ?, ?, 3, ?, NULL, 'pending', 'import', ?, ?)`,
  );
  const rows = [...benchRows()];
  const started = performance.now();
  store.sqlite.transaction(() => {
    for (const row of rows) for (const category of categoriesOf(row)) insert.run(row.ip, row.version, reporterId, category, row.comment, row.dateMs, NOW);
  }).immediate();
  store.close();
  const seconds = (performance.now() - started) / 1000;
  rmSync(dataDir, { recursive: true, force: true });
  return seconds;
}

// ---------------------------------------------------------------------------------------------------------
// The rounds

const timeBin = existsSync("/usr/bin/time") ? "/usr/bin/time" : null;

async function peakOf(pid: number, exited: Promise<number>): Promise<number> {
  let peakKb = 0;
  let done = false;
  void exited.then(() => (done = true));
  while (!done) {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch {
      break;
    }
    await Bun.sleep(50);
  }
  return peakKb;
}

async function round(n: number): Promise<{ seconds: number; peakMb: number }> {
  const dataDir = join(dir, `round-${n}`);
  rmSync(dataDir, { recursive: true, force: true });
  cpSync(template, dataDir, { recursive: true });
  const argv = [...cli, "import", "reports", csvPath, "--reporter", REPORTER, "--data-dir", dataDir];
  const started = performance.now();
  const proc = Bun.spawn(timeBin ? [timeBin, "-f", "%e %M", ...argv] : argv, { stdout: "pipe", stderr: "pipe" });
  const polled = timeBin ? Promise.resolve(0) : peakOf(proc.pid, proc.exited);
  const [stdout, stderr, code, polledKb] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited, polled]);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`round ${n}: exit ${code}: ${stderr}`);
  const expected = `imported ${expectedReports} reports from ${ROWS} rows`;
  if (!stdout.startsWith(expected) || !stdout.includes("skipped 0 bad rows")) throw new Error(`round ${n}: expected "${expected} … skipped 0 bad rows", got: ${stdout}`);
  const timed = timeBin ? /(\d+(?:\.\d+)?) (\d+)\s*$/.exec(stderr) : null;
  if (timeBin && !timed) throw new Error(`round ${n}: no figures from ${timeBin}: ${stderr}`);
  const peakKb = timed ? Number(timed[2]) : polledKb;
  rmSync(dataDir, { recursive: true, force: true });
  return { seconds, peakMb: peakKb / 1024 };
}

try {
  const rounds: { seconds: number; peakMb: number }[] = [];
  for (let n = 1; n <= ROUNDS; n++) {
    const r = await round(n);
    rounds.push(r);
    console.log(`round ${n}: ${fmt(r.seconds, 2)} s, peak RSS ${fmt(r.peakMb)} MB (${timeBin ? "GNU time %M" : "VmHWM polled"}), ${Math.round(ROWS / r.seconds).toLocaleString("en")} rows/s`);
  }
  const ceilingSeconds = ceiling();
  console.log(`ceiling: raw bun:sqlite inserts of the same ${expectedReports.toLocaleString("en")} reports into \`reports\` (its indexes, WAL, synchronous=FULL, one transaction): ${fmt(ceilingSeconds, 2)} s`);
  rounds.forEach((r, i) => {
    const ratio = r.seconds / ceilingSeconds;
    console.log(
      `round ${i + 1}: import / ceiling = ${fmt(ratio, 2)}x; ${fmt(r.seconds, 2)} s <= ${TARGET_S} s -> ${r.seconds <= TARGET_S ? "PASS" : "FAIL"}; ` +
        `${fmt(r.peakMb)} MB <= ${TARGET_MB} MB -> ${r.peakMb <= TARGET_MB ? "PASS" : "FAIL"}`,
    );
    results.push([`round ${i + 1}: ${ROWS.toLocaleString("en")} rows in <= ${TARGET_S} s`, r.seconds <= TARGET_S]);
    results.push([`round ${i + 1}: peak RSS <= ${TARGET_MB} MB`, r.peakMb <= TARGET_MB]);
  });
} finally {
  if (arg("--keep") === undefined) rmSync(dir, { recursive: true, force: true });
}

for (const [name, ok] of results) console.log(`${ok ? "PASS" : "FAIL"}  ${name}`);
process.exit(results.length > 0 && results.every(([, ok]) => ok) ? 0 : 1);
