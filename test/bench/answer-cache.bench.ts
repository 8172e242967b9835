// Benchmark of the answer cache at its limit (issue 16: no stalls from eviction): the cache full of answers
// (the production limit), then rounds of new answers, each evicting the oldest. Ceiling, measured in the same
// round: the least any such cache does per answer, a plain Map keyed by address with the oldest key deleted
// by counter, and the answer's bytes written into one buffer. Targets: every round within 3x its ceiling, and
// no round's ratio more than 1.5x the lowest (the cost must not grow as evictions pile up).
// Run: npx bun test/bench/answer-cache.bench.ts [--rounds R]

import { AnswerCache } from "../../src/services/lookups/answer-cache";
import { CACHE_LIMIT } from "../../src/services/lookups/reputation";
import { ipv4FromNumber, type Ip } from "../../src/domain/ip";

const TARGET_RATIO = 3;
const TARGET_SPREAD = 1.5;
const roundsArg = process.argv.indexOf("--rounds");
const ROUNDS = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 6;
const PER_ROUND = CACHE_LIMIT;

const body = (ip: Ip) =>
  `{"success":true,"data":{"ipAddress":"${ip.text}","reputationScore":100,"riskLevel":"LOW","totalReports":0,"verifiedReports":0,"categories":[],"country":"US","isp":"Example Networks","cached":true}}`;
// Distinct addresses for the fill and every round, made before timing.
const ips = Array.from({ length: CACHE_LIMIT + ROUNDS * PER_ROUND }, (_, i) => ipv4FromNumber(0x0b000000 + i * 7));
const bodies = ips.map(body);

const cache = new AnswerCache(CACHE_LIMIT);
for (let i = 0; i < CACHE_LIMIT; i++) cache.set(ips[i], bodies[i], Number.POSITIVE_INFINITY);

const plainMap = new Map<number, number>();
const plainBytes = Buffer.alloc(1 << 20);
for (let i = 0; i < CACHE_LIMIT; i++) plainMap.set(ips[i].value, i);
let plainOldest = 0;

function timed(run: (from: number, to: number) => void, from: number): number {
  const started = performance.now();
  run(from, from + PER_ROUND);
  return ((performance.now() - started) * 1e6) / PER_ROUND;
}

const cacheRound = (from: number, to: number) => {
  for (let i = from; i < to; i++) {
    cache.settle(0);
    cache.set(ips[i], bodies[i], Number.POSITIVE_INFINITY);
  }
};
const ceilingRound = (from: number, to: number) => {
  let at = 0;
  for (let i = from; i < to; i++) {
    plainMap.delete(ips[plainOldest++].value);
    if (at > plainBytes.length - 1024) at = 0;
    at += plainBytes.write(bodies[i], at, "utf8");
    plainMap.set(ips[i].value, at);
  }
};

console.log(`# answer cache at its limit (${CACHE_LIMIT.toLocaleString("en")} answers), ${PER_ROUND.toLocaleString("en")} new answers a round, each evicting the oldest`);
const rows: { ours: number; ceiling: number }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const from = CACHE_LIMIT + round * PER_ROUND;
  const ceiling = timed(ceilingRound, from);
  const ours = timed(cacheRound, from);
  rows.push({ ours, ceiling });
  console.log(`round ${round + 1}: ${ours.toFixed(0).padStart(6)} ns per answer cached | ceiling (Map + bytes) ${ceiling.toFixed(0).padStart(5)} ns | ratio ${(ours / ceiling).toFixed(2)}`);
}
if (cache.size !== CACHE_LIMIT || cache.ofIpv4(ips[ips.length - 1].value) < 0 || cache.ofIpv4(ips[0].value) >= 0) throw new Error("the cache did not keep the newest answers");

const ratios = rows.map((r) => r.ours / r.ceiling);
const spread = Math.max(...ratios) / Math.min(...ratios);
const worst = Math.max(...ratios);
const okRatio = worst <= TARGET_RATIO;
const okSpread = spread <= TARGET_SPREAD;
console.log(`${okRatio ? "PASS" : "FAIL"}  every round within ${TARGET_RATIO}x its ceiling: worst ${worst.toFixed(2)}x`);
console.log(`${okSpread ? "PASS" : "FAIL"}  highest ratio within ${TARGET_SPREAD}x the lowest: ${spread.toFixed(2)}x`);
process.exit(okRatio && okSpread ? 0 : 1);
