// Benchmark of a server's start on 1 M addresses (issue 16): a data directory with N addresses written straight
// into `addresses`; the first start (no index file yet: the index is rebuilt from the table and written at the
// stop) is printed, then ROUNDS rounds of: spawn `serve`, time from the spawn to the first 200 from /readyz, the
// resident size (VmRSS from /proc/PID/status) once ready, stop. The ceiling, measured in the same rounds: a raw
// Bun.serve process that opens the same database file and answers /readyz from it (its time to the first 200
// and its RSS). Targets: ready within 0.5 s (the median of the rounds) and at most 300 MB resident (every round).
// Run: npx bun test/bench/start.bench.ts [--addresses N] [--rounds R] [--binary]

import { Database } from "bun:sqlite";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ensureExecutable } from "./support/executable";
import { argNumber } from "./support/args";

const TARGET_READY_MS = 500;
const TARGET_RSS_MB = 300;

interface Start {
  readyMs: number;
  rssMb: number;
  /** The server's stdout up to the moment it was ready. */
  log: string;
}

function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

function rssMbOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** Spawns `argv` (which listens on `port`), times the first 200 from /readyz, reads its RSS, stops it cleanly. */
async function timedStart(argv: string[], port: number): Promise<Start> {
  const started = performance.now();
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "inherit", env: { ...process.env, NO_COLOR: "1", ABUSE_INTEL_ADMIN_PASSWORD: "start-bench-password" } });
  let log = "";
  const drained = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) log += decoder.decode(chunk, { stream: true });
  })();
  const deadline = Date.now() + 120_000;
  let readyMs = -1;
  while (readyMs < 0) {
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`${argv.join(" ")} never answered /readyz: ${log}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (response.status === 200) readyMs = performance.now() - started;
      await response.arrayBuffer();
    } catch {
      await Bun.sleep(2);
    }
  }
  const rssMb = rssMbOf(proc.pid);
  const seen = log;
  proc.kill("SIGTERM");
  const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
  const code = await proc.exited;
  clearTimeout(timer);
  await drained;
  if (code !== 0) throw new Error(`${argv.join(" ")} did not stop cleanly (exit ${code})`);
  return { readyMs, rssMb, log: seen };
}

const indexLine = (log: string) => log.split("\n").find((l) => l.startsWith("index: ")) ?? "(no index line)";
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number, d = 0) => x.toFixed(d);

async function main(): Promise<void> {
  const addresses = argNumber("--addresses", 1_000_000);
  const rounds = argNumber("--rounds", 3);
  const useBinary = process.argv.includes("--binary");
  const root = join(import.meta.dir, "..", "..");
  const server = useBinary ? [ensureExecutable()] : [process.execPath, join(root, "src/main.ts")];

  const setup = performance.now();
  // Imported here, not at the top: the ceiling process runs this file too and must load nothing of ours.
  const { prepareLookupData } = await import("./support/lookup-data");
  const data = await prepareLookupData(addresses, 0);
  const database = join(data.dataDir, "abuse-intel.db");
  console.log(`# start benchmark: ${addresses.toLocaleString("en")} addresses, server ${useBinary ? "build/out/abuse-intel" : "bun src/main.ts"} serve (data ready in ${fmt((performance.now() - setup) / 1000, 1)} s)`);
  const serve = (port: number) => [...server, "serve", "--host", "127.0.0.1", "--port", String(port), "--data-dir", data.dataDir];
  const ceiling = (port: number) => [process.execPath, import.meta.path, "--ceiling", database, String(port)];

  const firstPort = freePort();
  const first = await timedStart(serve(firstPort), firstPort);
  console.log(`first start (no index file yet): ready in ${fmt(first.readyMs)} ms, RSS ${fmt(first.rssMb)} MB — ${indexLine(first.log)}`);
  if (!indexLine(first.log).includes("rebuilt")) throw new Error("the first start did not rebuild the index");

  const ready: number[] = [];
  const rss: number[] = [];
  const ceilingReady: number[] = [];
  const ceilingRss: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const port = freePort();
    const s = await timedStart(serve(port), port);
    if (!indexLine(s.log).startsWith("index: loaded")) throw new Error(`round ${round} did not load the index file: ${indexLine(s.log)}`);
    const cport = freePort();
    const c = await timedStart(ceiling(cport), cport);
    ready.push(s.readyMs);
    rss.push(s.rssMb);
    ceilingReady.push(c.readyMs);
    ceilingRss.push(c.rssMb);
    console.log(
      `round ${round}: serve ready in ${fmt(s.readyMs).padStart(4)} ms, RSS ${fmt(s.rssMb).padStart(3)} MB | ceiling (raw Bun.serve on the same database) ${fmt(c.readyMs).padStart(3)} ms, RSS ${fmt(c.rssMb).padStart(3)} MB | ${fmt(s.readyMs / c.readyMs, 1)}x its time, +${fmt(s.rssMb - c.rssMb)} MB — ${indexLine(s.log)}`,
    );
  }
  const readyMedian = median(ready);
  const rssMax = Math.max(...rss);
  const readyOk = readyMedian <= TARGET_READY_MS;
  const rssOk = rssMax <= TARGET_RSS_MB;
  console.log(`${readyOk ? "PASS" : "FAIL"}  ready ≤ ${TARGET_READY_MS} ms (median of ${rounds} rounds): ${fmt(readyMedian)} ms; ceiling median ${fmt(median(ceilingReady))} ms (${fmt(readyMedian / median(ceilingReady), 1)}x)`);
  console.log(`${rssOk ? "PASS" : "FAIL"}  RSS ≤ ${TARGET_RSS_MB} MB once ready (every round): largest ${fmt(rssMax)} MB; ceiling ${fmt(Math.max(...ceilingRss))} MB`);
  rmSync(data.dataDir, { recursive: true, force: true });
  process.exit(readyOk && rssOk ? 0 : 1);
}

// `--ceiling DB PORT`: this file is also the ceiling server.
const ceilingAt = process.argv.indexOf("--ceiling");
if (ceilingAt > 0) {
  const db = new Database(process.argv[ceilingAt + 1]!, { readwrite: true });
  process.once("SIGTERM", () => process.exit(0));
  Bun.serve({
    hostname: "127.0.0.1",
    port: Number(process.argv[ceilingAt + 2]),
    fetch: (request) => {
      if (new URL(request.url).pathname !== "/readyz") return new Response("not found", { status: 404 });
      const ok = db.query("SELECT 1 AS one").get() !== null;
      return Response.json({ success: ok, status: "ready" }, { status: ok ? 200 : 503 });
    },
  });
} else {
  await main();
}
