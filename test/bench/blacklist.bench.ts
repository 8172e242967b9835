// Benchmark of `/api/v2/blacklist` (contract 13) at the service, on N listed IPv4 addresses (scores 0-69, a
// thousand report times), confidenceMinimum=25:
// - a firewall's poll of an unchanged list (default limit 10,000): the list is cached per index state;
// - the same poll after a change (the walk and the order are made again);
// - the whole list (limit=10000000) pulled chunk by chunk: its longest pull, the event loop's longest stop;
// - onlyCountries=ZZ (matches nothing), after a change and again.
// Run: npx bun test/bench/blacklist.bench.ts [--entries N]   (default 300,000; a few seconds)

import { ipv4FromNumber } from "../../src/domain/ip";
import { Blacklist, type BlacklistQuery } from "../../src/services/abuseipdb/blacklist";
import { createHarness } from "../support/harness";

const argAt = process.argv.indexOf("--entries");
const N = argAt > 0 ? Number(process.argv[argAt + 1]) : 300_000;
const TARGET_POLL_MS = 5;
const TARGET_PULL_MS = 25;
const TARGET_NOTHING_MATCHES_MS = 20;

const h = await createHarness();
const s = h.services;
const now = h.clock.now();
for (let i = 0; i < N; i++) {
  s.index.upsert(ipv4FromNumber((0x05000000 + i * 2654435761) >>> 0), { reputationScore: i % 70, totalReports: 1, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now - (i % 1000) * 1000 });
}
const blacklist = new Blacklist({ index: s.index, allowlist: s.allowlist, enrichment: s.enrichment, clock: s.clock, expireDue: () => s.reputation.expireDue() });
const query = (q: Partial<BlacklistQuery> = {}): BlacklistQuery => ({ confidenceMinimum: 25, limit: 10_000, ipVersion: null, onlyCountries: null, exceptCountries: null, plaintext: false, ...q });

/** Milliseconds of the answer (made synchronously, with its first chunk), then its body pulled to the end. */
async function request(q: BlacklistQuery): Promise<{ ms: number; bytes: number; longestPull: number }> {
  const start = performance.now();
  const { body } = blacklist.answer(q);
  const ms = performance.now() - start;
  if (body instanceof Uint8Array) return { ms, bytes: body.length, longestPull: 0 };
  const reader = body.getReader();
  let bytes = 0;
  let longestPull = 0;
  for (;;) {
    const t = performance.now();
    const { done, value } = await reader.read();
    longestPull = Math.max(longestPull, performance.now() - t);
    if (done) return { ms, bytes, longestPull };
    bytes += value.length;
  }
}
const best = async (q: BlacklistQuery, rounds = 5) => Math.min(...(await Promise.all(Array.from({ length: rounds }, () => request(q)))).map((r) => r.ms));

const results: [string, boolean][] = [];
const check = (name: string, ok: boolean) => {
  results.push([name, ok]);
  console.log(`  ${name} -> ${ok ? "PASS" : "FAIL"}`);
};

console.log(`${N} listed`);
s.index.touch();
const cold = await request(query());
const poll = await best(query());
console.log(`  default-limit poll: after a change ${cold.ms.toFixed(1)} ms, unchanged ${poll.toFixed(2)} ms`);
check(`unchanged poll < ${TARGET_POLL_MS} ms`, poll < TARGET_POLL_MS);

const whole = await request(query({ limit: 10_000_000 }));
console.log(`  limit=10000000: ${(whole.bytes / 2 ** 20).toFixed(0)} MiB, first chunk ${whole.ms.toFixed(1)} ms, longest pull ${whole.longestPull.toFixed(1)} ms`);
check(`longest pull < ${TARGET_PULL_MS} ms`, whole.longestPull < TARGET_PULL_MS);

s.index.touch();
const zz = query({ onlyCountries: new Set(["ZZ"]) });
const zzCold = await request(zz);
const zzWarm = await best(zz);
console.log(`  onlyCountries=ZZ: after a change ${zzCold.ms.toFixed(1)} ms, unchanged ${zzWarm.toFixed(2)} ms`);
check(`onlyCountries=ZZ unchanged < ${TARGET_NOTHING_MATCHES_MS} ms`, zzWarm < TARGET_NOTHING_MATCHES_MS);

await h.close();
process.exit(results.every(([, ok]) => ok) ? 0 : 1);
