// Benchmark of the CrowdSec decisions stream (issue 14), over HTTP on a real port, with 1 M listed addresses:
// - the startup answer, fetched by curl in its own process: time to first byte (target < 1 s) and to the whole
//   body, its size, and the server's RSS while it streams (this process is the server; targets: flat, i.e. the
//   highest RSS of the body's second half within 25 MiB of the first half's, and a peak below the body's size:
//   the answer is never held whole);
// - the delta pull with nothing changed, beside a reputation lookup over the same connection kind in the same run
//   (the ceiling: a pull should cost a bounded number of lookups, here at most 2,000, as it walks the list).
// Run: npx bun test/bench/decisions.bench.ts

import { ipv4FromNumber } from "../../src/domain/ip";
import { listen } from "../../src/http/server";
import type { AddressRecord } from "../../src/index/reputation-index";
import { addUser } from "../support/accounts";
import { createHarness } from "../support/harness";
import { rng } from "../support/random";

const ENTRIES = 1_000_000;
const fmt = (x: number, d = 1) => x.toFixed(d);
const results: [string, boolean][] = [];
const h = await createHarness();
const user = await addUser(h, { tier: "enterprise" });
const random = rng(11);
const record: AddressRecord = { reputationScore: 30, totalReports: 2, verifiedReports: 0, categoriesMask: 1 << 12, lastCategoryBit: 12, firstSeenMs: h.clock.now(), lastSeenMs: h.clock.now() };
const seen = new Set<number>();
while (seen.size < ENTRIES) seen.add(random() >>> 0);
for (const a of seen) h.services.index.upsert(ipv4FromNumber(a), record);
h.services.index.compact();
Bun.gc(true);
const server = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0 });
const base = `http://127.0.0.1:${server.port}`;
const headers = { "X-Api-Key": user.key };

const restingRss = process.memoryUsage().rss;
const samples: [number, number][] = [];
const sampler = setInterval(() => samples.push([performance.now(), process.memoryUsage().rss]), 10);
const started = performance.now();
// The client is curl in its own process (slowed to 100 MB/s, a fast LAN, so RSS can be sampled along the
// way), so this process's RSS is the server's alone.
const curl = Bun.spawn(["curl", "-s", "--limit-rate", "100M", "-o", "/dev/null", "-H", `X-Api-Key: ${user.key}`, "-w", "%{time_starttransfer} %{time_total} %{size_download}", `${base}/v1/decisions/stream?startup=true`], { stdout: "pipe" });
const [ttfb, total, size] = (await new Response(curl.stdout).text()).trim().split(" ").map(Number);
await curl.exited;
clearInterval(sampler);
const first = ttfb * 1000;
const whole = total * 1000;
const bytes = size;
// Flat: what the heap takes for the answer's garbage it takes early (JSC sizes its heap to the allocation
// rate), and the second half of the body adds nothing; an answer held whole would grow RSS by its size. RSS
// goes up and down with the collector (a saw-tooth of chunks waiting for it), so the halves are compared by
// their highest RSS, not by two single samples, which landed on a tooth's top or bottom by chance.
const highestIn = (from: number, to: number) =>
  Math.max(restingRss, ...samples.filter(([t]) => t > started + whole * from && t <= started + whole * to).map(([, r]) => r));
const peak = Math.max(...samples.map(([, r]) => r));
const grew = (peak - restingRss) / 2 ** 20;
const secondHalf = (highestIn(0.5, 1) - highestIn(0, 0.5)) / 2 ** 20;
console.log(
  `startup answer, ${ENTRIES.toLocaleString("en")} decisions: first byte ${fmt(first)} ms (target < 1000), whole body ${fmt(whole / 1000, 2)} s, ${fmt(bytes / 2 ** 20)} MiB; ` +
    `server RSS ${fmt(restingRss / 2 ** 20, 0)} MiB at rest, peak +${fmt(grew)} MiB (target < the body's size), highest RSS of the body's second half +${fmt(secondHalf)} MiB over the first's (target < 25: flat)`,
);
results.push(
  ["first byte < 1 s", first < 1000],
  ["RSS flat: the second half's highest within 25 MiB of the first's", secondHalf < 25],
  ["never held whole: RSS grew by less than the body's size", grew < bytes / 2 ** 20],
);

// Delta pulls with nothing changed vs a reputation lookup, each the median of 21.
const median = async (n: number, fn: () => Promise<unknown>) => {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[n >> 1];
};
await (await fetch(`${base}/v1/decisions/stream`, { headers })).text(); // the cursor now holds everything
const delta = await median(21, async () => {
  const body = await (await fetch(`${base}/v1/decisions/stream`, { headers })).text();
  if (body !== '{"new":[],"deleted":[]}') throw new Error(`unexpected delta: ${body.slice(0, 80)}`);
});
const lookup = await median(21, async () => (await fetch(`${base}/v1/ip/8.8.8.8/reputation`, { headers })).text());
const ratio = delta / lookup;
console.log(`delta pull, nothing changed: ${fmt(delta, 2)} ms; a reputation lookup over HTTP in the same run ${fmt(lookup, 3)} ms; ratio ${fmt(ratio, 0)} lookups (ceiling 2,000) -> ${ratio <= 2000 ? "PASS" : "FAIL"}`);
results.push(["delta pull <= 2,000 lookups", ratio <= 2000]);

server.stop(true);
await h.close();
const missed = results.filter(([, ok]) => !ok);
console.log(missed.length === 0 ? "all targets met" : `missed: ${missed.map(([n]) => n).join("; ")}`);
process.exit(missed.length === 0 ? 0 : 1);
