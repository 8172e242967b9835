// Benchmark of report ingest (issue 16): POST /v1/ip/report over HTTP with user JWTs from 64 reporters, wrk -t1
// -c64, against the real server (`src/main.ts serve --sync full`, or `--binary`) on a data directory holding
// 1 M addresses; every 201 follows a durable commit (synchronous=FULL). Half the reports are about stored
// addresses (a rescore of a row that exists), half about new ones; no report is a duplicate. The ceiling,
// measured in the same run after each round, is batched raw SQLite inserts of report rows into the same schema
// with the same durability, in batches of the size the round's group commit formed (read from /metrics).
// The server is pinned to core 0 and wrk to core 1. Exits non-zero when a target is missed.
// Run: npx bun test/bench/ingest.bench.ts [--addresses N] [--seconds S] [--rounds R] [--binary] [--cpu-prof DIR]

import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databasePath, inTransaction, openStore } from "../../src/store/database";
import { prepareLookupData } from "./support/lookup-data";
import { makeReporters, newAddress, ReportRequests, runReports as runReportsWith } from "./support/report-load";
import { startServer, stopServer, type ServerProcess as Server } from "./support/server-process";
import { cpuMicros, runWrk, type WrkResult } from "./support/wrk";
import { ensureExecutable } from "./support/executable";
import { argNumber } from "./support/args";

const TARGET_REPORTS_PER_SECOND = 10_000;
const TARGET_P99_MS = 20;
const SERVER_CORE = 0;
const LOAD_CORE = 1;
const CONNECTIONS = 64;
const REPORTERS = 64;
/** Requests prepared per second of a round: more than the server can take, so wrk never sends one twice. */
const PREPARED_PER_SECOND = 30_000;

const ADDRESSES = argNumber("--addresses", 1_000_000);
const SECONDS = argNumber("--seconds", 5);
const ROUNDS = argNumber("--rounds", 3);
const USE_BINARY = process.argv.includes("--binary");
/** `--cpu-prof DIR`: the server writes a CPU profile there when it stops. */
const PROFILE_DIR = process.argv.includes("--cpu-prof") ? process.argv[process.argv.indexOf("--cpu-prof") + 1]! : null;
const root = join(import.meta.dir, "..", "..");
const runReports = (url: string, requestsFile: string, seconds: number) => runReportsWith(url, requestsFile, { seconds, connections: CONNECTIONS, core: LOAD_CORE });

/** Reports accepted and group commits so far, from the server's /metrics. */
async function commitCounts(url: string): Promise<{ reports: number; batches: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sample = (name: string) => Number(new RegExp(`^${name} (\\d+)`, "m").exec(text)?.[1] ?? Number.NaN);
  return { reports: sample("abuse_intel_reports_accepted_total"), batches: sample("abuse_intel_report_batches_total") };
}

/** Batched raw INSERTs of report rows into the same schema, durable (synchronous=FULL), `batchSize` per commit. */
function rawInsertCeiling(total: number, batchSize: number): number {
  const dir = mkdtempSync(join(tmpdir(), "abuse-intel-bench-raw-"));
  const store = openStore(dir, { sync: "full" });
  try {
    const now = Date.now();
    const userId = Number(
      store.sqlite
        .query("INSERT INTO users (email, password_hash, tier, role, disabled, created_at, updated_at) VALUES ('raw@bench', 'x', 'pro', 'user', 0, ?, ?)")
        .run(now, now).lastInsertRowid,
    );
    const insert = store.sqlite.prepare(
      `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, evidence, status, source, created_at, status_changed_at)
       VALUES (?, 4, ?, 'SSH', 3, 'benchmark', NULL, 'pending', 'api', ?, ?)`,
    );
    const start = performance.now();
    for (let done = 0; done < total; ) {
      const size = Math.min(batchSize, total - done);
      inTransaction(store, () => {
        for (let i = 0; i < size; i++) insert.run(newAddress(done + i), userId, now, now);
      });
      done += size;
    }
    return total / ((performance.now() - start) / 1000);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (us: number) => (us / 1000).toFixed(2);

async function main() {
  const setupStart = performance.now();
  const data = await prepareLookupData(ADDRESSES, 0);
  const { tokens } = await makeReporters(data.dataDir, REPORTERS);
  const work = mkdtempSync(join(tmpdir(), "abuse-intel-bench-ingest-"));
  let server: Server | null = null;
  try {
    // One request file per run (warm-up, rounds), each report once: alternately a stored address (rescoring a
    // row that exists) and a new one, reporters in turn.
    const requests = new ReportRequests(work, data.reported);
    const requestFile = (name: string, count: number) => requests.file(name, count, tokens);
    const warmupFile = requestFile("warmup.txt", PREPARED_PER_SECOND * 2);
    const roundFiles = Array.from({ length: ROUNDS }, (_, r) => requestFile(`round${r}.txt`, PREPARED_PER_SECOND * SECONDS));

    const profile = PROFILE_DIR === null ? [] : ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`];
    const serverArgv = USE_BINARY ? [ensureExecutable()] : [process.execPath, ...profile, join(root, "src/main.ts")];
    server = await startServer([...serverArgv, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data.dataDir, "--sync", "full"], { core: SERVER_CORE, what: "abuse-intel" });
    for (let i = 0; ; i++) {
      const ready = await fetch(`${server.url}/readyz`).catch(() => null);
      if (ready?.status === 200) break;
      if (i > 600) throw new Error("the server never became ready");
      await Bun.sleep(100);
    }
    console.log(`# report ingest benchmark: ${ADDRESSES.toLocaleString("en")} addresses stored, server ${USE_BINARY ? "build/out/abuse-intel" : "bun src/main.ts"} serve --sync full ` +
      `(set up in ${((performance.now() - setupStart) / 1000).toFixed(1)} s), ${REPORTERS} reporters with JWTs, wrk -t1 -c${CONNECTIONS} ${SECONDS} s × ${ROUNDS} rounds, ` +
      `server on core ${SERVER_CORE}, wrk on core ${LOAD_CORE}; each 201 follows a durable commit`);

    const warm = await runReports(server.url, warmupFile, 2);
    const failures = (r: WrkResult) => r.status + r.connect + r.read + r.write + r.timeout;
    let acknowledged = warm.requests - warm.status;
    let failed = failures(warm);

    const rounds: { perSecond: number; p99Ms: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const before = await commitCounts(server.url);
      const cpuBefore = await cpuMicros(server.proc.pid);
      const r = await runReports(server.url, roundFiles[round]!, SECONDS);
      const cpuUsPerReport = ((await cpuMicros(server.proc.pid)) - cpuBefore) / Math.max(1, r.requests);
      const after = await commitCounts(server.url);
      acknowledged += r.requests - r.status;
      failed += failures(r);
      const batches = after.batches - before.batches;
      const meanBatch = (after.reports - before.reports) / Math.max(1, batches);
      const ceiling = rawInsertCeiling(Math.min(50_000, r.requests), Math.max(1, Math.round(meanBatch)));
      rounds.push({ perSecond: r.perSecond, p99Ms: r.p99Us / 1000 });
      console.log(
        `round ${round + 1}: ${Math.round(r.perSecond).toLocaleString("en").padStart(7)} reports/s  p50 ${ms(r.p50Us)} ms  p99 ${ms(r.p99Us)} ms  ` +
          `${batches} commits, mean batch ${meanBatch.toFixed(1)}, server CPU ${cpuUsPerReport.toFixed(0)} µs/report  ceiling (raw inserts, ${Math.round(meanBatch)} per durable commit) ` +
          `${Math.round(ceiling).toLocaleString("en")}/s  ratio ${(r.perSecond / ceiling).toFixed(3)}` +
          (failures(r) > 0 ? `  ERRORS ${JSON.stringify({ status: r.status, connect: r.connect, read: r.read, write: r.write, timeout: r.timeout })}` : ""),
      );
    }

    // Every acknowledged report is in the file: counted with a separate connection after the server stops.
    await stopServer(server);
    server = null;
    const other = new Database(databasePath(data.dataDir), { readonly: true });
    const inFile = (other.query("SELECT count(*) AS n FROM reports").get() as { n: number }).n;
    other.close();
    console.log(`stored: ${inFile.toLocaleString("en")} reports in the file, ${acknowledged.toLocaleString("en")} acknowledged with 201`);

    const rate = median(rounds.map((r) => r.perSecond));
    const p99 = median(rounds.map((r) => r.p99Ms));
    const results = [
      { pass: rate >= TARGET_REPORTS_PER_SECOND, line: `ingest ≥ ${TARGET_REPORTS_PER_SECOND.toLocaleString("en")} durable reports/s (median round): ${Math.round(rate).toLocaleString("en")}` },
      { pass: p99 < TARGET_P99_MS, line: `p99 < ${TARGET_P99_MS} ms (median round): ${p99.toFixed(2)} ms` },
      { pass: failed === 0 && inFile >= acknowledged, line: `no failed request, every 201 stored: ${failed} failed, ${inFile} ≥ ${acknowledged}` },
    ];
    for (const r of results) console.log(`${r.pass ? "PASS" : "FAIL"}  ${r.line}`);
    process.exitCode = results.every((r) => r.pass) ? 0 : 1;
  } finally {
    if (server !== null) {
      await stopServer(server);
    }
    rmSync(work, { recursive: true, force: true });
    rmSync(data.dataDir, { recursive: true, force: true });
  }
}

await main();
