// Benchmark of the CrowdSec decisions stream (contract 14, issues 14 and 29), against the real server as a process
// of its own (`src/main.ts serve`, or build/out/abuse-intel with --binary) on one core, with N listed addresses
// (default 1 M; --entries N or BENCH_DECISIONS_ENTRIES for a smoke run), wrk and curl on the other core:
// - the startup answer, read by curl (slowed to 100 MB/s, a fast LAN, so the server's RSS can be sampled along the
//   way): time to first byte (target < 1 s) and the server's RSS growth while it streams (target < 25 MiB: flat);
// - delta pulls with nothing changed (one bouncer's cursor, pulled back to back by wrk): the server's CPU per pull
//   (target <= 5 ms), beside a reputation lookup's CPU per request in the same run (the ceiling);
// - `GET /v1/decisions?ip=` of listed addresses: the server's CPU per request against the same lookup's
//   (target <= 1.5x: about the same).
// Run: npx bun test/bench/decisions.bench.ts [--entries N] [--seconds S] [--binary]

import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { prepareListedData } from "./support/bouncer-load";
import { startServer, stopServer } from "./support/server-process";
import { cpuMicros, runWrk } from "./support/wrk";
import { ensureExecutable } from "./support/executable";

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const ENTRIES = Number(arg("--entries") ?? process.env.BENCH_DECISIONS_ENTRIES ?? 1_000_000);
const SECONDS = Number(arg("--seconds") ?? 5);
const root = join(import.meta.dir, "../..");
const serverArgv = process.argv.includes("--binary") ? [ensureExecutable()] : [process.execPath, join(root, "src/main.ts")];
const fmt = (x: number, d = 1) => x.toFixed(d);
const results: [string, boolean][] = [];

const data = await prepareListedData(ENTRIES);
const server = await startServer([...serverArgv, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data.dataDir, "--sync", "normal"], { core: 0, what: "abuse-intel" });
const pid = server.proc.pid;
const rss = async () => Number(/VmRSS:\s+(\d+)/.exec(await Bun.file(`/proc/${pid}/status`).text())?.[1] ?? 0) * 1024;
const headers = { "X-Api-Key": data.apiKey };

try {
  // Ready, and the list computed once (what every pull after an index change does), before anything is measured;
  // then settled: right after its first start the server writes index.bin and runs its jobs, which held the first
  // startup answer's first byte 1.4-2 s (five answers in a row within 50 ms, or 30 s).
  await (await fetch(`${server.url}/v1/decisions?ip=${data.listed[0]}`, { headers })).text();
  for (let quick = 0, deadline = Date.now() + 30_000; quick < 5 && Date.now() < deadline; ) {
    const t = performance.now();
    await (await fetch(`${server.url}/v1/decisions?ip=${data.listed[1]}`, { headers })).text();
    quick = performance.now() - t < 50 ? quick + 1 : 0;
    await Bun.sleep(200);
  }
  const restingRss = await rss();
  let peakRss = restingRss;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakRss = Math.max(peakRss, await rss());
      await Bun.sleep(10);
    }
  })();
  const curl = Bun.spawn(["taskset", "-c", "1", "curl", "-s", "--limit-rate", "100M", "-o", "/dev/null", "-H", `X-Api-Key: ${data.apiKey}`, "-w", "%{time_starttransfer} %{time_total} %{size_download}", `${server.url}/v1/decisions/stream?startup=true`], { stdout: "pipe" });
  const [ttfb, total, size] = (await new Response(curl.stdout).text()).trim().split(" ").map(Number);
  await curl.exited;
  sampling = false;
  await sampler;
  const grew = (peakRss - restingRss) / 2 ** 20;
  console.log(
    `startup answer, ${ENTRIES.toLocaleString("en")} decisions: first byte ${fmt(ttfb * 1000)} ms (target < 1000), whole body ${fmt(total, 2)} s, ${fmt(size / 2 ** 20)} MiB; ` +
      `server RSS ${fmt(restingRss / 2 ** 20, 0)} MiB at rest, grew by ${fmt(grew)} MiB while it streamed (target < 25: flat)`,
  );
  results.push(["startup answer: first byte < 1 s", ttfb < 1], ["startup answer: RSS grew < 25 MiB", grew < 25]);
  // A second startup pull with nothing changed since: its first byte, without the list's computation (read and
  // dropped here after the first chunk).
  const again = performance.now();
  const second = await fetch(`${server.url}/v1/decisions/stream?startup=true`, { headers });
  const reader = (second.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  const secondFirstByte = performance.now() - again;
  await reader.cancel();
  console.log(`a second startup pull, nothing changed since: first byte ${fmt(secondFirstByte)} ms`);

  const delta = await (await fetch(`${server.url}/v1/decisions/stream`, { headers })).text();
  if (delta !== '{"new":[],"deleted":[]}') throw new Error(`the delta after the startup answer is not empty: ${delta.slice(0, 80)}`);
  const dir = data.dataDir;
  const pathsFile = (name: string, paths: string[]) => {
    const file = join(dir, `${name}.paths`);
    writeFileSync(file, `${paths.join("\n")}\n`);
    return file;
  };
  const sample = data.listed.filter((_, i) => i % Math.max(1, Math.floor(ENTRIES / 10_000)) === 0);
  const wrk = (paths: string, connections: number) => runWrk({ url: server.url, scriptArgs: ["get", paths, data.apiKey], connections, seconds: SECONDS, core: 1, serverPid: pid });
  const lookups = await wrk(pathsFile("lookups", sample.map((ip) => `/v1/ip/${ip}/reputation`)), 1);
  const deltas = await wrk(pathsFile("deltas", ["/v1/decisions/stream"]), 1);
  const around = await wrk(pathsFile("around", sample.map((ip) => `/v1/decisions?ip=${ip}`)), 1);
  if (lookups.status + deltas.status + around.status > 0) throw new Error("some requests were answered other than 2xx");
  const lookupCpu = lookups.serverCpuUsPerRequest as number;
  const deltaCpu = deltas.serverCpuUsPerRequest as number;
  const aroundCpu = around.serverCpuUsPerRequest as number;
  console.log(`reputation lookup (the ceiling): ${fmt(lookupCpu)} µs of server CPU a request, ${fmt(lookups.perSecond, 0)} req/s on one connection`);
  console.log(
    `delta pull with nothing changed at ${ENTRIES.toLocaleString("en")} listed: ${fmt(deltaCpu / 1000, 3)} ms of server CPU a pull (target <= 5), ` +
      `${fmt(deltaCpu / lookupCpu, 1)} lookups; ${deltas.requests} pulls, p99 ${fmt(deltas.p99Us / 1000, 2)} ms`,
  );
  console.log(`GET /v1/decisions?ip= of listed addresses: ${fmt(aroundCpu)} µs of server CPU a request, ${fmt(aroundCpu / lookupCpu, 2)}x a lookup's (target <= 1.5)`);
  results.push(["empty delta <= 5 ms of server CPU", deltaCpu <= 5000], ["decisions?ip= <= 1.5x a lookup's CPU", aroundCpu <= 1.5 * lookupCpu]);
  console.log(`server CPU in all: ${fmt((await cpuMicros(pid)) / 1e6, 1)} s`);
} finally {
  await stopServer(server);
  rmSync(data.dataDir, { recursive: true, force: true });
}
const missed = results.filter(([, ok]) => !ok);
console.log(missed.length === 0 ? "all targets met" : `missed: ${missed.map(([n]) => n).join("; ")}`);
process.exit(missed.length === 0 ? 0 : 1);
