// Benchmark of read-only edges (issue 17) at 1 M addresses:
// - a signed snapshot's size, export time, and what an edge's pull costs (download over loopback + verify);
// - the swap: an edge serving snapshot A answers lookups from a client in another process while it verifies
//   snapshot B in a child process (as the edge does), opens it and reloads its listener; the p99 of lookups from
//   the start of the verification to 0.5 s after the swap must stay under 5 ms (the p99 of a quiet second
//   before is printed beside it, measured in the same run);
// - the edge's RSS serving 1 M addresses.
// Run: npx bun test/bench/edge.bench.ts [--addresses N]

import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSnapshotServices } from "../../src/app/snapshot-services";
import { defaultConfig } from "../../src/config";
import { formatIpv4 } from "../../src/domain/ip";
import { createApp } from "../../src/http/app";
import { handlerOptions } from "../../src/http/server";
import { openEnrichment } from "../../src/services/enrichment/enrichment";
import { exportSnapshot, verifySnapshot } from "../../src/services/snapshots/export";
import { generateKeyPair, readPrivateKey, readPublicKey } from "../../src/services/snapshots/signing";
import { openStore } from "../../src/store/database";
import { rng } from "../support/random";
import { selfCommand } from "../../src/cli/self-command";

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const N = Number(arg("--addresses") ?? 1_000_000);
const KEY = "edge-bench-key-0123456789abcdef";
const fmt = (x: number, d = 1) => x.toFixed(d);
const dir = mkdtempSync(join(tmpdir(), "abuse-intel-edgebench-"));
const results: [string, boolean][] = [];

try {
  // The primary's store: N addresses written straight into `addresses`.
  const store = openStore(join(dir, "data"));
  const next = rng(17);
  const sample: string[] = [];
  store.sqlite.exec("PRAGMA synchronous = OFF; PRAGMA cache_size = -262144");
  const now = Date.now();
  const insert = store.sqlite.prepare(
    `INSERT OR IGNORE INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
                            first_seen, last_seen, scored_at, rescore_due_at) VALUES (?, 4, ?, 1, 0, 2, 'BRUTE_FORCE', ?, ?, ?, NULL)`,
  );
  store.sqlite.transaction(() => {
    for (let i = 0; i < N; i++) {
      const ip = formatIpv4(next() >>> 0);
      if (i % 1000 === 0) sample.push(ip);
      insert.run(ip, next() % 101, now - 86_400_000, now - 3_600_000, now);
    }
  })();
  const keys = generateKeyPair();
  writeFileSync(join(dir, "k.key"), keys.privateKeyPem);
  writeFileSync(join(dir, "k.pub"), keys.publicKeyPem);
  const enrichment = await openEnrichment({});
  const a = join(dir, "a.sqlite");
  const b = join(dir, "b.sqlite");
  const exported = await exportSnapshot({ store, enrichment, out: a, nowMs: now, signKey: readPrivateKey(join(dir, "k.key")) });
  store.sqlite.exec("UPDATE addresses SET reputation_score = 7 WHERE rowid % 97 = 0");
  await exportSnapshot({ store, enrichment, out: b, nowMs: now + 60_000, signKey: readPrivateKey(join(dir, "k.key")) });
  store.close();
  console.log(`snapshot of ${N.toLocaleString("en")} addresses: ${fmt(statSync(a).size / 2 ** 20)} MiB, exported in ${fmt(exported.durationMs / 1000, 2)} s`);

  // A pull: the bytes over loopback, then the verification an edge runs before serving.
  const primary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(Bun.file(a)) });
  const t0 = performance.now();
  const bytes = await (await fetch(`http://127.0.0.1:${primary.port}/`)).arrayBuffer();
  const downloadMs = performance.now() - t0;
  primary.stop(true);
  const t1 = performance.now();
  const check = verifySnapshot(a, readPublicKey(join(dir, "k.pub")));
  const verifyMs = performance.now() - t1;
  console.log(`pull: ${fmt(bytes.byteLength / 2 ** 20)} MiB downloaded on loopback in ${fmt(downloadMs)} ms, verified (integrity, hash, signature: ${check.ok}) in ${fmt(verifyMs)} ms`);

  // The edge serving A; a client process looks up addresses; the edge swaps to B in the middle.
  const config = { ...defaultConfig(), dataDir: dir, apiKeys: [KEY] };
  let current = await createSnapshotServices({ config: { ...config, snapshot: a } });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, ...handlerOptions(current, createApp(current)) });
  const client = join(dir, "client.ts");
  writeFileSync(
    client,
    `const ips = ${JSON.stringify(sample)}; const end = performance.now() + 7000; const out = [];
     await Promise.all(Array.from({ length: 8 }, async (_, w) => { let i = w;
       while (performance.now() < end) { const t = performance.now();
         await (await fetch("http://127.0.0.1:${server.port}/v1/ip/" + ips[i++ % ips.length] + "/reputation", { headers: { "x-api-key": "${KEY}" } })).arrayBuffer();
         out.push([t, performance.now() - t]); } }));
     console.log(JSON.stringify({ origin: performance.timeOrigin, out }));`,
  );
  const proc = Bun.spawn([process.execPath, client], { stdout: "pipe", stderr: "inherit" });
  await Bun.sleep(2500);
  const swapStart = Date.now();
  const s0 = performance.now();
  // What the edge does with a new file: verify it in a child process (as cli/edge.ts does), then open and swap.
  const verifier = Bun.spawn(selfCommand(["snapshot", "verify", b, "--pubkey", join(dir, "k.pub"), "--json"]), { stdout: "pipe", stderr: "ignore" });
  const verified = JSON.parse(await new Response(verifier.stdout).text()) as { ok: boolean };
  if (!verified.ok) throw new Error("snapshot B does not verify");
  const verifiedMs = performance.now() - s0;
  const nextServices = await createSnapshotServices({ config: { ...config, snapshot: b } });
  server.reload({ ...handlerOptions(nextServices, createApp(nextServices)) });
  const swapMs = performance.now() - s0 - verifiedMs;
  const old = current;
  current = nextServices;
  const { origin, out } = JSON.parse(await new Response(proc.stdout).text()) as { origin: number; out: [number, number][] };
  await proc.exited;
  server.stop(true);
  await old.stop();
  old.store.close();
  await current.stop();
  current.store.close();

  const at = (t: number) => origin + t; // client's clock -> epoch ms
  const p99 = (xs: number[]) => (xs.length === 0 ? Number.NaN : xs.sort((x, y) => x - y)[Math.floor(xs.length * 0.99)]);
  const quiet = out.filter(([t]) => at(t) >= swapStart - 1500 && at(t) < swapStart - 500).map(([, d]) => d);
  const around = out.filter(([t]) => at(t) >= swapStart && at(t) < swapStart + verifiedMs + swapMs + 500).map(([, d]) => d);
  const swapP99 = p99(around);
  console.log(
    `swap to a new snapshot: verified in a child process in ${fmt(verifiedMs)} ms, then ${fmt(swapMs)} ms to open it and reload the listener; lookup p99 ${fmt(swapP99, 2)} ms from the start of the verification to 0.5 s after the swap ` +
      `(${around.length} lookups, slowest ${fmt(Math.max(...around), 1)} ms), ${fmt(p99(quiet), 2)} ms in a quiet second before (target < 5 ms) -> ${swapP99 < 5 ? "PASS" : "FAIL"}`,
  );
  results.push(["lookup p99 < 5 ms during a swap", swapP99 < 5]);
  // The edge's memory: a whole `serve --snapshot` process on A, its RSS once it answers.
  const edge = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/main.ts"), "serve", "--snapshot", a, "--api-key", KEY, "--host", "127.0.0.1", "--port", "0", "--data-dir", dir], {
    stdout: "pipe",
    stderr: "ignore",
  });
  const reader = edge.stdout.getReader();
  let printed = "";
  while (!/listening on http:\/\/[^:]+:(\d+)/.test(printed)) printed += new TextDecoder().decode((await reader.read()).value);
  const port = /listening on http:\/\/[^:]+:(\d+)/.exec(printed)![1];
  for (const ip of sample.slice(0, 200)) await (await fetch(`http://127.0.0.1:${port}/v1/ip/${ip}/reputation`, { headers: { "x-api-key": KEY } })).arrayBuffer();
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(await Bun.file(`/proc/${edge.pid}/status`).text())![1]) / 1024;
  edge.kill("SIGTERM");
  await edge.exited;
  console.log(`edge RSS serving ${N.toLocaleString("en")} addresses (serve --snapshot, after 200 lookups): ${fmt(rss)} MiB`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const missed = results.filter(([, ok]) => !ok);
console.log(missed.length === 0 ? "all targets met" : `missed: ${missed.map(([n]) => n).join("; ")}`);
process.exit(missed.length === 0 ? 0 : 1);
