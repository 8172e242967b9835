// Benchmark of lookups over HTTP (issues 4 and 16): `GET /v1/ip/{ip}/reputation` with an API key, authentication
// and rate limiting on (a counted account), at concurrency 64, for reported addresses, for never-reported ones
// (each asked once) and for a half-and-half mix, each round against a raw `Bun.serve` returning a fixed JSON body
// measured in the same round; and `POST /v1/ip/bulk` with 100 addresses against one single lookup request.
// The server under test is the real one (`src/main.ts serve`, or `--binary` for build/out/abuse-intel) on
// 127.0.0.1 with a fresh data directory holding N reported addresses (1 M by default). Load comes from wrk
// (Debian package); servers are pinned to core 0 and wrk to core 1. Every round is printed; exits non-zero when
// a target is missed.
// Run: npx bun test/bench/lookup.bench.ts [--addresses N] [--seconds S] [--rounds R] [--binary]

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prepareLookupData } from "./support/lookup-data";
import { startServer as startProcess, stopServer, type ServerProcess as Server } from "./support/server-process";
import { runWrk, wrkAvailable, type WrkResult } from "./support/wrk";
import { ensureExecutable } from "./support/executable";
import { argNumber } from "./support/args";

const startServer = (argv: string[], what: string) => startProcess(argv, { core: SERVER_CORE, what });

/** Issue 16: every lookup workload at >= 0.70 of the ceiling with p99 < 2 ms (the median round), no round below
 * 0.60 or above p99 5 ms, consecutive rounds within 15 % of each other. */
const TARGET_RATIO = 0.7;
const FLOOR_RATIO = 0.6;
const TARGET_P99_MS = 2;
const CEILING_P99_MS = 5;
const ROUND_SPREAD = 0.15;
const TARGET_BULK_FACTOR = 2;
const BULK_SIZE = 100;
const SERVER_CORE = 0;
const LOAD_CORE = 1;
/** Reported addresses the lookups of reported addresses cycle over (the answer cache holds them). */
const HOT_REPORTED = 20_000;
/** Never-reported addresses per run: more than a run can ask, so none is asked twice. */
const FRESH_PER_RUN = 600_000;

const ADDRESSES = argNumber("--addresses", 1_000_000);
const SECONDS = argNumber("--seconds", 5);
const ROUNDS = argNumber("--rounds", 3);
const USE_BINARY = process.argv.includes("--binary");
const root = join(import.meta.dir, "..", "..");

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`benchmark precondition failed: ${message}`);
}

const ms = (us: number) => (us / 1000).toFixed(2);
const rate = (r: WrkResult) => Math.round(r.perSecond).toLocaleString("en").padStart(9);

async function main() {
  if (!(await wrkAvailable())) {
    console.error("wrk is not installed: apt-get install -y wrk");
    process.exit(2);
  }
  const setupStart = performance.now();
  const freshRuns = 2 * (ROUNDS + 1); // never-reported and mixed runs, warm-up included
  const data = await prepareLookupData(ADDRESSES, freshRuns * FRESH_PER_RUN);
  const work = mkdtempSync(join(tmpdir(), "abuse-intel-bench-wrk-"));
  const servers: Server[] = [];
  try {
    // Request lists: reported addresses cycle over 20k of them (cached after the first pass); each run of
    // never-reported addresses gets a slice of its own, so every one of them is asked for the first time; the mix
    // alternates the two. Bulk bodies mix 50 reported and 50 never-reported (cycled) addresses.
    const hits = data.reported.slice(0, HOT_REPORTED);
    const write = (name: string, lines: string[]) => {
      const file = join(work, name);
      writeFileSync(file, lines.join("\n") + "\n");
      return file;
    };
    const pathOf = (ip: string) => `/v1/ip/${ip}/reputation`;
    const hitFile = write("hits.txt", hits.map(pathOf));
    let freshUsed = 0;
    const freshSlice = (count: number) => data.unknown.slice(freshUsed, (freshUsed += count));
    const neverFile = (run: string) => write(`never-${run}.txt`, freshSlice(FRESH_PER_RUN).map(pathOf));
    const mixedFile = (run: string) => {
      const fresh = freshSlice(FRESH_PER_RUN);
      return write(`mixed-${run}.txt`, fresh.map((ip, i) => pathOf(i % 2 === 0 ? hits[(i >>> 1) % hits.length]! : ip)));
    };
    const bodies: string[] = [];
    for (let b = 0; b < 200; b++) {
      const ips: string[] = [];
      for (let i = 0; i < BULK_SIZE / 2; i++) ips.push(hits[(b * 97 + i * 31) % hits.length]!, data.unknown[(b * 89 + i * 37) % 20_000]!);
      bodies.push(JSON.stringify({ ips }));
    }
    const bulkFile = write("bulk.txt", bodies);

    const serverArgv = USE_BINARY ? [ensureExecutable()] : [process.execPath, join(root, "src/main.ts")];
    const server = await startServer([...serverArgv, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data.dataDir, "--sync", "normal"], "abuse-intel");
    servers.push(server);
    for (let i = 0; ; i++) {
      const ready = await fetch(`${server.url}/readyz`).catch(() => null);
      if (ready?.status === 200) break;
      if (i > 600) throw new Error("abuse-intel never became ready");
      await Bun.sleep(100);
    }
    console.log(`# lookup benchmark: ${ADDRESSES.toLocaleString("en")} reported addresses, server ${USE_BINARY ? "build/out/abuse-intel" : "bun src/main.ts"} serve ` +
      `(ready in ${((performance.now() - setupStart) / 1000).toFixed(1)} s from an empty directory), wrk -t1 -c64 ${SECONDS} s × ${ROUNDS} rounds, ` +
      `server on core ${SERVER_CORE}, wrk on core ${LOAD_CORE}`);

    // The behaviour under test is the contract's: 200, the rate-limit headers, cached false then true, for a
    // reported and for a never-reported address.
    const headers = { "x-api-key": data.apiKey };
    let sampleBody = "";
    for (const [probe, reported] of [[hits[hits.length - 1]!, true], [data.unknown[data.unknown.length - 1]!, false]] as const) {
      const first = await fetch(`${server.url}${pathOf(probe)}`, { headers });
      const firstBody = (await first.json()) as { data: { ipAddress: string; cached: boolean; totalReports: number } };
      const second = await fetch(`${server.url}${pathOf(probe)}`, { headers });
      const secondBody = (await second.json()) as typeof firstBody;
      check(first.status === 200 && second.status === 200, `lookup status ${first.status}, ${second.status}`);
      check(firstBody.data.ipAddress === probe && (firstBody.data.totalReports > 0) === reported, `lookup of ${probe}: ${JSON.stringify(firstBody)}`);
      check(firstBody.data.cached === false && secondBody.data.cached === true, `cached false then true for ${probe}`);
      check(first.headers.get("x-ratelimit-limit") === String(data.dailyLimit), `X-RateLimit-Limit: ${first.headers.get("x-ratelimit-limit")}`);
      if (reported) sampleBody = JSON.stringify(secondBody);
    }
    const bulk = await fetch(`${server.url}/v1/ip/bulk`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: bodies[0] });
    const bulkBody = (await bulk.json()) as { data: { results: unknown[]; invalid: unknown[] } };
    check(bulk.status === 200 && bulkBody.data.results.length === BULK_SIZE && bulkBody.data.invalid.length === 0, `bulk: ${bulk.status}`);

    const ceilingBodyFile = write("ceiling-body.json", [sampleBody]);
    const ceiling = await startServer([process.execPath, join(import.meta.dir, "support/ceiling-server.ts"), ceilingBodyFile], "ceiling");
    servers.push(ceiling);

    const target = (url: string, pid: number, scriptArgs: string[]) => ({ url, serverPid: pid, scriptArgs });
    const on = (scriptArgs: string[]) => target(server.url, server.proc.pid!, scriptArgs);
    const run = async (name: string, kind: ReturnType<typeof on>, connections: number, seconds: number) => {
      const r = await runWrk({ ...kind, connections, seconds, core: LOAD_CORE });
      if (r.status + r.connect + r.read + r.write + r.timeout > 0) throw new Error(`${name}: wrk saw errors ${JSON.stringify(r)}`);
      return r;
    };
    const ceilingRun = target(ceiling.url, ceiling.proc.pid!, ["get", hitFile, data.apiKey]);
    const reportedRun = on(["get", hitFile, data.apiKey]);
    const bulkRun = on(["post", "/v1/ip/bulk", bulkFile, data.apiKey]);

    // Warm up: JIT, the response cache filled for the reported addresses.
    await run("ceiling", ceilingRun, 64, 1);
    await run("reported", reportedRun, 64, 1);
    await run("never", on(["get", neverFile("warm"), data.apiKey]), 64, 1);
    await run("mixed", on(["get", mixedFile("warm"), data.apiKey]), 64, 1);
    await run("bulk", bulkRun, 64, 1);

    // Interleaved rounds, so a neighbour's burst on the shared machine hits both sides alike; each workload's
    // ratio is against the ceiling of its own round.
    const workloads = ["reported", "never", "mixed"] as const;
    type Workload = (typeof workloads)[number];
    const labels: Record<Workload, string> = {
      reported: `reported addresses only (${HOT_REPORTED.toLocaleString("en")}, cycled)`,
      never: "never-reported addresses, each asked once",
      mixed: "half reported, half never-reported",
    };
    const rounds: { ceiling: WrkResult; byWorkload: Record<Workload, WrkResult>; bulk: WrkResult; hits1: WrkResult; bulk1: WrkResult }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const ceil = await run("ceiling", ceilingRun, 64, SECONDS);
      const byWorkload = {
        reported: await run("reported", reportedRun, 64, SECONDS),
        never: await run("never", on(["get", neverFile(String(round)), data.apiKey]), 64, SECONDS),
        mixed: await run("mixed", on(["get", mixedFile(String(round)), data.apiKey]), 64, SECONDS),
      };
      const bulk = await run("bulk", bulkRun, 64, SECONDS);
      // One request at a time: the time of one request, without queueing.
      const hits1 = await run("reported c1", reportedRun, 1, SECONDS);
      const bulk1 = await run("bulk c1", bulkRun, 1, SECONDS);
      rounds.push({ ceiling: ceil, byWorkload, bulk, hits1, bulk1 });
    }

    const cpu = (r: WrkResult) => `CPU ${r.serverCpuUsPerRequest!.toFixed(1).padStart(5)} µs/req`;
    const line = (r: WrkResult) => `${rate(r)} req/s  p50 ${ms(r.p50Us)} ms  p99 ${ms(r.p99Us)} ms  ${cpu(r)}`;
    const results: { line: string; pass: boolean }[] = [];
    const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
    rounds.forEach((r, i) => console.log(`round ${i + 1} ceiling: raw Bun.serve, fixed ${sampleBody.length}-byte JSON body   ${line(r.ceiling)}`));
    for (const w of workloads) {
      console.log(`GET /v1/ip/{ip}/reputation, ${labels[w]}:`);
      const ratios: number[] = [];
      const p99s: number[] = [];
      const perSecond: number[] = [];
      rounds.forEach((r, i) => {
        const ratio = r.byWorkload[w].perSecond / r.ceiling.perSecond;
        ratios.push(ratio);
        p99s.push(r.byWorkload[w].p99Us / 1000);
        perSecond.push(r.byWorkload[w].perSecond);
        console.log(`  round ${i + 1}: ${line(r.byWorkload[w])}  ratio ${ratio.toFixed(2)}`);
      });
      const spread = Math.max(...perSecond.slice(1).map((x, i) => Math.abs(x - perSecond[i]!) / perSecond[i]!), 0);
      const ok =
        median(ratios) >= TARGET_RATIO && median(p99s) < TARGET_P99_MS && Math.min(...ratios) >= FLOOR_RATIO && Math.max(...p99s) <= CEILING_P99_MS && spread <= ROUND_SPREAD;
      results.push({
        line:
          `${labels[w]}: median ${median(ratios).toFixed(2)} of the ceiling (≥ ${TARGET_RATIO}), median p99 ${median(p99s).toFixed(2)} ms (< ${TARGET_P99_MS}); ` +
          `lowest ${Math.min(...ratios).toFixed(2)} (≥ ${FLOOR_RATIO}), highest p99 ${Math.max(...p99s).toFixed(2)} ms (≤ ${CEILING_P99_MS}); ` +
          `consecutive rounds within ${(spread * 100).toFixed(0)} % (≤ ${ROUND_SPREAD * 100} %)`,
        pass: ok,
      });
    }
    console.log(`POST /v1/ip/bulk, ${BULK_SIZE} addresses (50 reported, 50 never-reported, cycled):`);
    rounds.forEach((r, i) => console.log(`  round ${i + 1}: ${line(r.bulk)}  = ${Math.round(r.bulk.perSecond * BULK_SIZE).toLocaleString("en")} addresses/s`));
    // The time of one request is its median latency sent one at a time: the mean is dominated here by the
    // virtual machine's wake-up delays, which fall mostly on the short single lookups and flatter the ratio.
    const factors = rounds.map((r) => r.bulk1.p50Us / r.hits1.p50Us);
    rounds.forEach((r, i) =>
      console.log(`  one at a time, round ${i + 1}: single lookup p50 ${ms(r.hits1.p50Us)} ms, bulk of ${BULK_SIZE} p50 ${ms(r.bulk1.p50Us)} ms: ${factors[i]!.toFixed(2)}×`),
    );
    results.push({ line: `bulk of ${BULK_SIZE}: ${median(factors).toFixed(2)}× the time of one single lookup request (≤ ${TARGET_BULK_FACTOR}×, median at concurrency 1)`, pass: median(factors) <= TARGET_BULK_FACTOR });
    for (const { line, pass } of results) console.log(`${pass ? "PASS" : "FAIL"}  ${line}`);
    process.exitCode = results.every((r) => r.pass) ? 0 : 1;
  } finally {
    for (const server of servers) await stopServer(server);
    rmSync(work, { recursive: true, force: true });
    rmSync(data.dataDir, { recursive: true, force: true });
  }
}

await main();
