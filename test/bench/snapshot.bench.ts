// Benchmark of snapshots and offline use (issue 7), each figure with a ceiling measured in the same run:
// - export of a store holding 1 M addresses (filled with SQL inserts into `addresses`): time against
//   `VACUUM INTO` of the same database (a raw consistent copy), and the file size per address;
// - verification (recomputing the content hash) of that file;
// - cold `check` of one address against the snapshot as a whole process, against `abuse-intel --version`
//   in the same run: target < 300 ms;
// - `check --json -` streaming all 1 M addresses through one process, against the same lookups and JSON
//   rendering in-process with no I/O.
// The executable is build/out/abuse-intel when it has the `check` command (run `npm run build` first), else
// `bun src/main.ts`; BENCH_BINARY=PATH picks another.
// Run: npx bun test/bench/snapshot.bench.ts [--addresses N] [--keep DIR]

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatIpv4, formatIpv6, parseIp } from "../../src/domain/ip";
import { openEnrichment } from "../../src/services/enrichment/enrichment";
import { openSnapshot } from "../../src/services/snapshots/sources";
import { exportSnapshot, verifySnapshot } from "../../src/services/snapshots/export";
import { openStore } from "../../src/store/database";
import { rng } from "../support/random";
import { ensureExecutable } from "./support/executable";

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const N = Number(arg("--addresses") ?? 1_000_000);
const V6_SHARE = 0.05;
const COLD_RUNS = 9;
const COLD_TARGET_MS = 300;

const root = join(import.meta.dir, "../..");
const dir = arg("--keep") ?? mkdtempSync(join(tmpdir(), "abuse-intel-snapbench-"));
const results: [string, boolean][] = [];
const fmt = (x: number, digits = 1) => x.toFixed(digits);
const mib = (bytes: number) => `${fmt(bytes / 1024 / 1024)} MiB`;

// ---------------------------------------------------------------------------------------------------------
// The store: N addresses written straight into `addresses`.

const dataDir = join(dir, "data");
const store = openStore(dataDir);
const addresses: string[] = [];
{
  const started = performance.now();
  const next = rng(7);
  const seen = new Set<number>();
  const now = Date.parse("2026-11-21T03:00:00Z");
  const insert = store.sqlite.prepare(
    `INSERT INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
                            first_seen, last_seen, scored_at, rescore_due_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const categories = ["SPAM", "BRUTE_FORCE", "PORT_SCAN", "SSH", "WEB_ATTACK"];
  // Filling is not what is measured: no fsync per commit, and a page cache that holds the table.
  store.sqlite.exec("PRAGMA synchronous = OFF; PRAGMA cache_size = -262144");
  store.sqlite.transaction(() => {
    while (addresses.length < N) {
      const r = next();
      let text: string;
      let version: number;
      if (r % 1000 < V6_SHARE * 1000) {
        text = formatIpv6(Uint32Array.of(0x2a000000 | (next() & 0xffffff), next(), next(), next()));
        version = 6;
      } else {
        const v = next();
        if (seen.has(v)) continue;
        seen.add(v);
        text = formatIpv4(v);
        version = 4;
      }
      const score = next() % 101;
      const total = 1 + (next() % 20);
      const bit = next() % categories.length;
      const first = now - (next() % (300 * 86_400_000));
      insert.run(text, version, score, total, next() % (total + 1), (1 << bit) | (1 << (next() % 16)), categories[bit], first, first + (next() % 86_400_000), now, now + 600_000);
      addresses.push(text);
    }
  })();
  store.sqlite.exec("DELETE FROM address_change_log");
  console.log(`store: ${N.toLocaleString("en-US")} addresses inserted in ${fmt((performance.now() - started) / 1000, 2)} s (${mib(statSync(store.path).size)})`);
}

// ---------------------------------------------------------------------------------------------------------
// Export vs VACUUM INTO

const file = join(dir, "snapshot.sqlite");
let exportMs = 0;
{
  const copy = join(dir, "vacuum-copy.sqlite");
  const t0 = performance.now();
  store.sqlite.exec(`VACUUM INTO '${copy}'`);
  const vacuumMs = performance.now() - t0;
  rmSync(copy, { force: true });

  const enrichment = await openEnrichment({});
  const result = await exportSnapshot({ store, enrichment, out: file, nowMs: Date.now() });
  exportMs = result.durationMs;
  const bytes = statSync(file).size;
  const rangeBytes = enrichment.rangeTables().reduce((s, t) => s + t.table.bytes.byteLength, 0);
  console.log(`export phases (ms): ${JSON.stringify(result.phases)}`);
  console.log(
    `export: ${fmt(exportMs / 1000, 2)} s for ${N.toLocaleString("en-US")} addresses; VACUUM INTO of the same database ${fmt(vacuumMs / 1000, 2)} s ` +
      `(ratio ${fmt(exportMs / vacuumMs, 2)}x)`,
  );
  console.log(
    `file: ${mib(bytes)} = ${fmt((bytes - rangeBytes) / N)} bytes per address + ${mib(rangeBytes)} of enrichment tables ` +
      `(the main database: ${mib(statSync(store.path).size)})`,
  );
  const v0 = performance.now();
  const verified = verifySnapshot(file);
  console.log(`verify: ${fmt((performance.now() - v0) / 1000, 2)} s (${verified.ok ? "ok" : verified.problems.join("; ")})`);
  results.push(["export and verify succeed", verified.ok]);
}
store.close();

// ---------------------------------------------------------------------------------------------------------
// Cold `check` of one address, as a whole process, vs `--version`

function pickCommand(): { command: string[]; label: string } {
  const candidates = [process.env.BENCH_BINARY || ensureExecutable()].filter((p): p is string => !!p && existsSync(p));
  for (const binary of candidates) {
    const probe = spawnSync(binary, ["check", "--help"], { encoding: "utf8" });
    if (probe.status === 0) return { command: [binary], label: binary };
    console.log(`note: ${binary} has no \`check\` command (built before it existed?): run \`npm run build\``);
  }
  return { command: [process.execPath, join(root, "src/main.ts")], label: "bun src/main.ts (no built executable with `check`)" };
}

function timeRuns(argv: string[], runs: number, stdin?: string): { median: number; min: number; status: number | null; stdout: string } {
  const times: number[] = [];
  const run = () => spawnSync(argv[0], argv.slice(1), { encoding: "utf8", input: stdin, env: { ...process.env, ABUSE_INTEL_DATA_DIR: dataDir } });
  let last = run(); // warms the page cache: "cold" is a new process, not a cold disk
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    last = run();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)], min: times[0], status: last.status, stdout: last.stdout };
}

const { command, label } = pickCommand();
console.log(`executable: ${label}`);
{
  const probe = addresses[Math.floor(N / 3)];
  const version = timeRuns([...command, "--version"], COLD_RUNS);
  // An address given as an argument: only its row is read (the index of the addresses asked for).
  const check = timeRuns([...command, "check", "--snapshot", file, "--json", probe], COLD_RUNS);
  // The same address on stdin: the whole pre-built index is loaded from its blobs (what `check -`, blocklists
  // and a snapshot server do at start).
  const whole = timeRuns([...command, "check", "--snapshot", file, "--json", "-"], COLD_RUNS, probe + "\n");
  const answered = (r: { status: number | null; stdout: string }) => {
    const record = r.status === 0 ? JSON.parse(r.stdout) : null;
    return record?.ip === parseIp(probe).text && record.reports > 0;
  };
  console.log(
    `cold check of one address against ${N.toLocaleString("en-US")}: median ${fmt(check.median)} ms (min ${fmt(check.min)}), ` +
      `--version ${fmt(version.median)} ms; ratio ${fmt(check.median / version.median, 2)}x; target < ${COLD_TARGET_MS} ms: ` +
      `${check.median < COLD_TARGET_MS ? "PASS" : "FAIL"}`,
  );
  console.log(
    `cold check - of one address (loads the whole pre-built index): median ${fmt(whole.median)} ms (min ${fmt(whole.min)}); ` +
      `ratio ${fmt(whole.median / version.median, 2)}x of --version; ${whole.median < COLD_TARGET_MS ? "under" : "OVER"} ${COLD_TARGET_MS} ms`,
  );
  results.push([`cold check < ${COLD_TARGET_MS} ms`, check.median < COLD_TARGET_MS && answered(check)]);
  results.push(["cold check - answers from the pre-built index", answered(whole)]);
}

// ---------------------------------------------------------------------------------------------------------
// `check --json -` streaming all addresses vs the same work in-process

{
  const list = join(dir, "addresses.txt");
  writeFileSync(list, addresses.join("\n") + "\n");
  const snap = openSnapshot(file);
  const t0 = performance.now();
  let bytes = 0;
  for (const text of addresses) bytes += Buffer.byteLength(JSON.stringify(snap.reputation.detail(parseIp(text)))) + 1;
  const inProcessMs = performance.now() - t0;
  snap.close();

  const t1 = performance.now();
  const run = Bun.spawnSync([...command, "check", "--snapshot", file, "--json", "-"], { stdin: Bun.file(list), stdout: "pipe", stderr: "pipe" });
  const streamMs = performance.now() - t1;
  const out = run.stdout.byteLength;
  const perSecond = (N / streamMs) * 1000;
  console.log(
    `check --json - of ${N.toLocaleString("en-US")} addresses: ${fmt(streamMs / 1000, 2)} s = ${Math.round(perSecond).toLocaleString("en-US")} addresses/s ` +
      `(${mib(out)} of JSON lines); in-process lookups + JSON ${fmt(inProcessMs / 1000, 2)} s; ratio ${fmt(inProcessMs / streamMs, 2)} of the ceiling`,
  );
  results.push(["check - answers every address", run.exitCode === 0 && out === bytes]);
}

if (arg("--keep") === undefined) rmSync(dir, { recursive: true, force: true });
for (const [name, ok] of results) console.log(`${ok ? "PASS" : "FAIL"}  ${name}`);
process.exit(results.every(([, ok]) => ok) ? 0 : 1);
