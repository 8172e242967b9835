// Benchmark of reports through an edge (contract 18, issue 27): wrk posts reports to an edge (`serve --follow
// --forward-key`), each acknowledged (202) only once durable in the edge's own queue file, which forwards them to
// the primary in batches; the figure is the forward path's end-to-end rate, acknowledged reports over the time
// from the first request until the primary stored the last one (the edge's queue empty), against the primary's own
// ingest measured in the same run with the same load generator (ingest.bench.ts: wrk -c64, JWT reporters, each
// report durable before its 201). Target: ≥ 0.5× direct ingest. The primary is pinned to core 0; the edge and wrk
// share core 1 (two cores). Exits non-zero when the target is missed or an acknowledged report is not stored once.
// Run: npx bun test/bench/edge-forward.bench.ts [--addresses N] [--seconds S] [--rounds R] [--binary]
// Small size (a quick smoke run): ABUSE_INTEL_BENCH_SMALL=1 (10,000 addresses, 2 s, 1 round).

import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databasePath } from "../../src/store/database";
import { prepareLookupData } from "./support/lookup-data";
import { makeReporters, ReportRequests, runReports } from "./support/report-load";
import { startServer, stopServer, type ServerProcess } from "./support/server-process";
import { cpuMicros } from "./support/wrk";
import { ensureExecutable } from "./support/executable";
import { argNumber } from "./support/args";

const TARGET_RATIO = 0.5;
const PRIMARY_CORE = 0;
const EDGE_CORE = 1;
const LOAD_CORE = 1;
const CONNECTIONS = 64;
const REPORTERS = 64;
const PREPARED_PER_SECOND = 30_000;
const EDGE_KEY = "edge-bench-client-key-0123456789";

const SMALL = process.env.ABUSE_INTEL_BENCH_SMALL === "1";
const ADDRESSES = argNumber("--addresses", SMALL ? 10_000 : 1_000_000);
const SECONDS = argNumber("--seconds", SMALL ? 2 : 5);
const ROUNDS = argNumber("--rounds", SMALL ? 1 : 3);
const USE_BINARY = process.argv.includes("--binary");
const root = join(import.meta.dir, "..", "..");
const program = USE_BINARY ? [ensureExecutable()] : [process.execPath, join(root, "src/main.ts")];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

async function forwardQueue(edgeUrl: string): Promise<number> {
  return ((await (await fetch(`${edgeUrl}/readyz`)).json()) as { forwardQueue: number }).forwardQueue;
}

async function main() {
  const setupStart = performance.now();
  const data = await prepareLookupData(ADDRESSES, 0);
  const { tokens, apiKey } = await makeReporters(data.dataDir, REPORTERS);
  const work = mkdtempSync(join(tmpdir(), "abuse-intel-bench-edge-forward-"));
  let primary: ServerProcess | null = null;
  let edge: ServerProcess | null = null;
  try {
    const keygen = Bun.spawnSync([...program, "snapshot", "keygen", "--out", join(work, "primary")]);
    if (keygen.exitCode !== 0) throw new Error(`snapshot keygen failed: ${keygen.stderr}`);
    const requests = new ReportRequests(work, data.reported);
    const directFiles = Array.from({ length: ROUNDS }, (_, r) => requests.file(`direct${r}.txt`, PREPARED_PER_SECOND * SECONDS, tokens));
    const edgeFiles = Array.from({ length: ROUNDS }, (_, r) => requests.file(`edge${r}.txt`, PREPARED_PER_SECOND * SECONDS, [EDGE_KEY]));
    const warmup = requests.file("warmup.txt", PREPARED_PER_SECOND, tokens);

    primary = await startServer([...program, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data.dataDir, "--sync", "full"], { core: PRIMARY_CORE, what: "primary" });
    await waitUntil("the primary", async () => (await fetch(`${primary!.url}/readyz`)).status === 200);
    const edgeDir = join(work, "edge-data");
    edge = await startServer(
      [...program, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", edgeDir, "--follow", primary.url, "--follow-key", apiKey, "--forward-key", apiKey,
        "--pubkey", join(work, "primary.pub"), "--every", "3600", "--api-key", EDGE_KEY],
      { core: EDGE_CORE, what: "edge" },
    );
    console.log(
      `# reports through an edge: ${ADDRESSES.toLocaleString("en")} addresses stored on the primary (set up in ${((performance.now() - setupStart) / 1000).toFixed(1)} s), ` +
        `${USE_BINARY ? "build/out/abuse-intel" : "bun src/main.ts"}, --sync full; wrk -t1 -c${CONNECTIONS} ${SECONDS} s × ${ROUNDS} rounds; primary on core ${PRIMARY_CORE}, edge and wrk on core ${EDGE_CORE}`,
    );
    await runReports(primary.url, warmup, { seconds: 1, connections: CONNECTIONS, core: LOAD_CORE });

    const direct: number[] = [];
    const forwarded: number[] = [];
    const acknowledgedRates: number[] = [];
    const acknowledgedIps: string[] = [];
    let failed = 0;
    let acknowledgedTotal = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const primaryCpu0 = await cpuMicros(primary.proc.pid);
      const d = await runReports(primary.url, directFiles[round]!, { seconds: SECONDS, connections: CONNECTIONS, core: LOAD_CORE });
      const directCpu = ((await cpuMicros(primary.proc.pid)) - primaryCpu0) / Math.max(1, d.requests - d.status);
      direct.push(d.perSecond);

      const edgeCpu0 = await cpuMicros(edge.proc.pid);
      const primaryCpu1 = await cpuMicros(primary.proc.pid);
      const started = performance.now();
      const e = await runReports(edge.url, edgeFiles[round]!, { seconds: SECONDS, connections: CONNECTIONS, core: LOAD_CORE });
      await waitUntil("the edge's queue to empty", async () => (await forwardQueue(edge!.url)) === 0);
      const seconds = (performance.now() - started) / 1000;
      const acknowledged = e.requests - e.status;
      const edgeCpu = ((await cpuMicros(edge.proc.pid)) - edgeCpu0) / Math.max(1, acknowledged);
      const primaryCpu = ((await cpuMicros(primary.proc.pid)) - primaryCpu1) / Math.max(1, acknowledged);
      failed += d.status + d.connect + d.read + d.write + d.timeout + e.status + e.connect + e.read + e.write + e.timeout;
      const rate = acknowledged / seconds;
      forwarded.push(rate);
      acknowledgedRates.push(e.perSecond);
      // wrk hands the file's lines out in order, after taking the first to check the script (never sent); answers
      // come back in any order, so the lines before the last CONNECTIONS of those answered were surely acknowledged
      // (a request cut at the end may be stored too).
      const lines = (await Bun.file(edgeFiles[round]!).text()).split("\n").slice(1, Math.max(1, e.requests + 1 - CONNECTIONS));
      acknowledgedTotal += acknowledged;
      for (const line of lines) acknowledgedIps.push(JSON.parse(line.slice(line.indexOf("\t") + 1)).ip);
      console.log(
        `round ${round + 1}: direct ingest ${Math.round(d.perSecond).toLocaleString("en").padStart(7)} reports/s (p99 ${(d.p99Us / 1000).toFixed(1)} ms, primary CPU ${directCpu.toFixed(0)} µs/report)  ` +
          `edge acknowledged ${Math.round(e.perSecond).toLocaleString("en").padStart(7)}/s (p99 ${(e.p99Us / 1000).toFixed(1)} ms), ` +
          `forwarded end to end ${Math.round(rate).toLocaleString("en").padStart(7)}/s (${acknowledged.toLocaleString("en")} in ${seconds.toFixed(2)} s; edge CPU ${edgeCpu.toFixed(0)} µs/report, primary ${primaryCpu.toFixed(0)} µs/report)  ` +
          `ratio ${(rate / d.perSecond).toFixed(2)}`,
      );
    }
    await stopServer(edge);
    edge = null;
    await stopServer(primary);
    primary = null;
    // Every acknowledged report on the primary once: counted with a connection of our own.
    const db = new Database(databasePath(data.dataDir), { readonly: true });
    const forwardedIps = new Set(
      db.query<{ ip: string }, []>("SELECT ip FROM reports WHERE reporter_id = (SELECT id FROM users WHERE email = 'forwarder@example.test')").all().map((r) => r.ip),
    );
    const forwardedReports = (db.query("SELECT count(*) AS n FROM reports WHERE reporter_id = (SELECT id FROM users WHERE email = 'forwarder@example.test')").get() as { n: number }).n;
    const forwardedRows = (db.query("SELECT count(*) AS n FROM forwarded_reports").get() as { n: number }).n;
    db.close();
    const missing = acknowledgedIps.filter((ip) => !forwardedIps.has(ip)).length;
    const twice = forwardedReports - forwardedIps.size;
    if (missing > 0) console.log(`missing: ${acknowledgedIps.filter((ip) => !forwardedIps.has(ip)).slice(0, 10).join(" ")}`);
    console.log(`stored: ${forwardedReports.toLocaleString("en")} forwarded reports on the primary (${forwardedRows.toLocaleString("en")} forwarded ids) for ${acknowledgedTotal.toLocaleString("en")} acknowledged by the edge; ${missing} missing, ${twice} stored twice`);

    const ratio = median(forwarded) / median(direct);
    const results = [
      { pass: ratio >= TARGET_RATIO, line: `forward path ≥ ${TARGET_RATIO}× direct ingest (medians): ${Math.round(median(forwarded)).toLocaleString("en")} / ${Math.round(median(direct)).toLocaleString("en")} = ${ratio.toFixed(2)}× (edge acknowledged ${Math.round(median(acknowledgedRates)).toLocaleString("en")}/s)` },
      { pass: failed === 0 && missing === 0 && twice === 0 && forwardedReports >= acknowledgedTotal, line: `every acknowledged report stored once: ${failed} failed requests, ${missing} missing, ${twice} twice, ${forwardedReports} stored ≥ ${acknowledgedTotal} acknowledged` },
    ];
    for (const r of results) console.log(`${r.pass ? "PASS" : "FAIL"}  ${r.line}`);
    process.exitCode = results.every((r) => r.pass) ? 0 : 1;
  } finally {
    if (edge !== null) await stopServer(edge);
    if (primary !== null) await stopServer(primary);
    rmSync(work, { recursive: true, force: true });
    rmSync(data.dataDir, { recursive: true, force: true });
  }
}

await main();
