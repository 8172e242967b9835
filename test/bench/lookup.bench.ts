// Benchmark of lookups over HTTP (issue 4): `GET /v1/ip/{ip}/reputation` with an API key, authentication and
// rate limiting on (a counted account), at concurrency 64, against a raw `Bun.serve` returning a fixed JSON body
// measured in the same run; and `POST /v1/ip/bulk` with 100 addresses against one single lookup request.
// The server under test is the real one (`src/main.ts serve`, or `--binary` for build/out/abuse-intel) on
// 127.0.0.1 with a fresh data directory holding N reported addresses. Load comes from wrk (Debian package);
// servers are pinned to core 0 and wrk to core 1. Exits non-zero when a target is missed.
// Run: npx bun test/bench/lookup.bench.ts [--addresses N] [--seconds S] [--rounds R] [--binary]

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prepareLookupData } from "./support/lookup-data";
import { runWrk, wrkAvailable, type WrkResult } from "./support/wrk";

const TARGET_RATIO = 0.6;
const TARGET_P99_MS = 5;
const TARGET_BULK_FACTOR = 2;
const BULK_SIZE = 100;
const SERVER_CORE = 0;
const LOAD_CORE = 1;

function argNumber(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

const ADDRESSES = argNumber("--addresses", 100_000);
const SECONDS = argNumber("--seconds", 3);
const ROUNDS = argNumber("--rounds", 3);
const USE_BINARY = process.argv.includes("--binary");
const root = join(import.meta.dir, "..", "..");

interface Server {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
}

/** Spawns a server pinned to the server core and waits for its "listening on http://…" line. */
async function startServer(argv: string[], what: string): Promise<Server> {
  const proc = Bun.spawn(["taskset", "-c", String(SERVER_CORE), ...argv], { cwd: root, stdout: "pipe", stderr: "inherit", env: { ...process.env, NO_COLOR: "1" } });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let seen = "";
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = /listening on (http:\/\/[0-9.]+:\d+)/.exec(seen);
    if (match) {
      // Keep draining its output so the server never blocks on a full pipe.
      void (async () => {
        while (!(await reader.read()).done);
      })();
      return { url: match[1]!, proc };
    }
    if (Date.now() > deadline) throw new Error(`${what} did not start: ${seen}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`${what} exited before listening: ${seen}`);
    seen += decoder.decode(value, { stream: true });
  }
}

async function stopServer(server: Server): Promise<void> {
  server.proc.kill("SIGTERM");
  const timer = setTimeout(() => server.proc.kill("SIGKILL"), 5_000);
  await server.proc.exited;
  clearTimeout(timer);
}

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
  const data = await prepareLookupData(ADDRESSES, 20_000);
  const work = mkdtempSync(join(tmpdir(), "abuse-intel-bench-wrk-"));
  const servers: Server[] = [];
  try {
    // Request lists: hits cycle over 20k reported addresses (the response cache holds them after the first
    // pass), misses over 20k unknown ones. Bulk bodies mix 50 hits and 50 misses.
    const hits = data.reported.slice(0, 20_000);
    const write = (name: string, lines: string[]) => {
      const file = join(work, name);
      writeFileSync(file, lines.join("\n") + "\n");
      return file;
    };
    const pathOf = (ip: string) => `/v1/ip/${ip}/reputation`;
    const hitFile = write("hits.txt", hits.map(pathOf));
    const missFile = write("misses.txt", data.unknown.map(pathOf));
    const bodies: string[] = [];
    for (let b = 0; b < 200; b++) {
      const ips: string[] = [];
      for (let i = 0; i < BULK_SIZE / 2; i++) ips.push(hits[(b * 97 + i * 31) % hits.length]!, data.unknown[(b * 89 + i * 37) % data.unknown.length]!);
      bodies.push(JSON.stringify({ ips }));
    }
    const bulkFile = write("bulk.txt", bodies);

    const serverArgv = USE_BINARY ? [join(root, "build/out/abuse-intel")] : [process.execPath, join(root, "src/main.ts")];
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

    // The behaviour under test is the contract's: 200, the rate-limit headers, cached false then true.
    const headers = { "x-api-key": data.apiKey };
    const probe = hits[hits.length - 1]!;
    const first = await fetch(`${server.url}${pathOf(probe)}`, { headers });
    const firstBody = (await first.json()) as { data: { ipAddress: string; cached: boolean; totalReports: number } };
    const second = await fetch(`${server.url}${pathOf(probe)}`, { headers });
    const secondBody = (await second.json()) as typeof firstBody;
    check(first.status === 200 && second.status === 200, `lookup status ${first.status}, ${second.status}`);
    check(firstBody.data.ipAddress === probe && firstBody.data.totalReports > 0, `lookup of a reported address: ${JSON.stringify(firstBody)}`);
    check(firstBody.data.cached === false && secondBody.data.cached === true, "cached false then true");
    check(first.headers.get("x-ratelimit-limit") === String(data.dailyLimit), `X-RateLimit-Limit: ${first.headers.get("x-ratelimit-limit")}`);
    check(Number(second.headers.get("x-ratelimit-remaining")) === data.dailyLimit - 2, `X-RateLimit-Remaining: ${second.headers.get("x-ratelimit-remaining")}`);
    const bulk = await fetch(`${server.url}/v1/ip/bulk`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: bodies[0] });
    const bulkBody = (await bulk.json()) as { data: { results: unknown[]; invalid: unknown[] } };
    check(bulk.status === 200 && bulkBody.data.results.length === BULK_SIZE && bulkBody.data.invalid.length === 0, `bulk: ${bulk.status}`);
    const sampleBody = JSON.stringify(secondBody);

    const ceilingBodyFile = write("ceiling-body.json", [sampleBody]);
    const ceiling = await startServer([process.execPath, join(import.meta.dir, "support/ceiling-server.ts"), ceilingBodyFile], "ceiling");
    servers.push(ceiling);

    const kinds = {
      ceiling: { url: ceiling.url, serverPid: ceiling.proc.pid, scriptArgs: ["get", hitFile, data.apiKey] },
      hits: { url: server.url, serverPid: server.proc.pid, scriptArgs: ["get", hitFile, data.apiKey] },
      misses: { url: server.url, serverPid: server.proc.pid, scriptArgs: ["get", missFile, data.apiKey] },
      bulk: { url: server.url, serverPid: server.proc.pid, scriptArgs: ["post", "/v1/ip/bulk", bulkFile, data.apiKey] },
    };
    type Kind = keyof typeof kinds;
    const run = (kind: Kind, connections: number, seconds: number) =>
      runWrk({ ...kinds[kind], connections, seconds, core: LOAD_CORE }).then((r) => {
        if (r.status + r.connect + r.read + r.write + r.timeout > 0) throw new Error(`${kind}: wrk saw errors ${JSON.stringify(r)}`);
        return r;
      });

    // Warm up: JIT, the response cache filled for hits and misses.
    for (const kind of ["ceiling", "hits", "misses", "bulk"] as Kind[]) await run(kind, 64, 1);

    // Interleaved rounds so a neighbour's burst on the shared machine hits both sides alike; the best round of
    // each kind counts (with its own p99).
    const best = new Map<string, WrkResult>();
    const keep = (name: string, r: WrkResult) => {
      const old = best.get(name);
      if (old === undefined || r.perSecond > old.perSecond) best.set(name, r);
    };
    const roundRatios: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const ceilingRun = await run("ceiling", 64, SECONDS);
      keep("ceiling c64", ceilingRun);
      for (const kind of ["hits", "misses", "bulk"] as Kind[]) {
        const r = await run(kind, 64, SECONDS);
        keep(`${kind} c64`, r);
        if (kind === "hits") roundRatios.push((r.perSecond / ceilingRun.perSecond).toFixed(2));
      }
      // One request at a time: the time of one request, without queueing.
      keep("hits c1", await run("hits", 1, SECONDS));
      keep("bulk c1", await run("bulk", 1, SECONDS));
    }
    const get = (name: string) => best.get(name)!;
    const ceil = get("ceiling c64");
    const cpu = (r: WrkResult) => `server CPU ${r.serverCpuUsPerRequest!.toFixed(1).padStart(5)} µs/req`;

    console.log(`ceiling: raw Bun.serve, fixed ${sampleBody.length}-byte JSON body        ${rate(ceil)} req/s  p50 ${ms(ceil.p50Us)} ms  p99 ${ms(ceil.p99Us)} ms  ${cpu(ceil)}`);
    const results: { line: string; pass: boolean }[] = [];
    const lookups = [
      ["hits", "reported addresses"],
      ["misses", "unknown addresses"],
    ] as const;
    for (const [kind, label] of lookups) {
      const r = get(`${kind} c64`);
      const ratio = r.perSecond / ceil.perSecond;
      console.log(`GET /v1/ip/{ip}/reputation, ${label.padEnd(28)} ${rate(r)} req/s  p50 ${ms(r.p50Us)} ms  p99 ${ms(r.p99Us)} ms  ${cpu(r)}  ratio ${ratio.toFixed(2)}`);
      const pass = ratio >= TARGET_RATIO && r.p99Us / 1000 < TARGET_P99_MS;
      results.push({ line: `lookups of ${label}: ${(ratio * 100).toFixed(0)} % of the ceiling (≥ ${TARGET_RATIO * 100} %), p99 ${ms(r.p99Us)} ms (< ${TARGET_P99_MS} ms)`, pass });
    }
    const hits64 = get("hits c64");
    console.log(`  hits/ceiling per round: ${roundRatios.join(", ")}; by server CPU per request: ${(ceil.serverCpuUsPerRequest! / hits64.serverCpuUsPerRequest!).toFixed(2)}`);
    const bulk64 = get("bulk c64");
    const bulkLoaded = hits64.perSecond / bulk64.perSecond;
    console.log(`POST /v1/ip/bulk, ${BULK_SIZE} addresses (50 hits, 50 misses)              ${rate(bulk64)} req/s  p50 ${ms(bulk64.p50Us)} ms  p99 ${ms(bulk64.p99Us)} ms  ${cpu(bulk64)}  = ${Math.round(bulk64.perSecond * BULK_SIZE).toLocaleString("en")} addresses/s`);
    const single1 = get("hits c1");
    const bulk1 = get("bulk c1");
    // The time of one request is its median latency sent one at a time: the mean is dominated here by the
    // virtual machine's wake-up delays, which fall mostly on the short single lookups and flatter the ratio.
    const bulkAlone = bulk1.p50Us / single1.p50Us;
    console.log(`one request at a time (concurrency 1): single lookup p50 ${ms(single1.p50Us)} ms (mean ${ms(single1.meanUs)}), bulk of ${BULK_SIZE} p50 ${ms(bulk1.p50Us)} ms (mean ${ms(bulk1.meanUs)})`);
    console.log(`bulk of ${BULK_SIZE} / single lookup: ${bulkAlone.toFixed(2)}× by median time of one request (by mean: ${(bulk1.meanUs / single1.meanUs).toFixed(2)}×); ` +
      `${bulkLoaded.toFixed(2)}× by requests/s at concurrency 64`);
    results.push({ line: `bulk of ${BULK_SIZE}: ${bulkAlone.toFixed(2)}× the time of one single lookup request (≤ ${TARGET_BULK_FACTOR}×, median at concurrency 1)`, pass: bulkAlone <= TARGET_BULK_FACTOR });
    for (const { line, pass } of results) console.log(`${pass ? "PASS" : "FAIL"}  ${line}`);
    process.exitCode = results.every((r) => r.pass) ? 0 : 1;
  } finally {
    for (const server of servers) await stopServer(server);
    rmSync(work, { recursive: true, force: true });
    rmSync(data.dataDir, { recursive: true, force: true });
  }
}

await main();
