// Benchmark of one DNS blocklist query's CPU (issue 26), without sockets: 1 M listed IPv4 addresses in the index,
// queries half listed and half never reported. Three ways of turning a query's bytes into the answer's bytes:
//   ours     the listener's path: our reader, the zone's rules, the A records prepared per (categories, risk)
//   library  dns-packet decodes the query and encodes an answer built as objects; same index and same rules
//   ceiling  the least any server can do: copy a fixed answer and write the query's id into it
// Target: ours costs at most a third of the library's CPU per query (CPU, not wall time: the machine is shared).
// The ceiling's ratio is printed to show what is left to gain.
// Run: npx bun test/bench/dns-codec.bench.ts [--entries N] (or DNS_BENCH_ENTRIES=N for a quick smoke run)

import dnsPacket from "dns-packet";
import { blocklistFilters } from "../../src/domain/blocklist/query";
import { ManualClock } from "../../src/domain/clock";
import { listedCodes } from "../../src/domain/dnsbl/answers";
import { ipv4FromNumber } from "../../src/domain/ip";
import type { RiskCode } from "../../src/domain/risk";
import { DnsblResponder } from "../../src/dns/responder";
import { CidrSet } from "../../src/index/cidr-set";
import { ReputationIndex } from "../../src/index/reputation-index";
import type { Allowlist } from "../../src/services/allowlist/allowlist";
import { listingOfV4, listingScratch } from "../../src/services/blocklists/membership";
import { rng } from "../support/random";

const argIndex = process.argv.indexOf("--entries");
const N = argIndex > 0 ? Number(process.argv[argIndex + 1]) : Number(process.env.DNS_BENCH_ENTRIES ?? 1_000_000);
const QUERIES = 200_000;
const ROUNDS = 3;
const ZONE = "dnsbl.abuse-intel.internal";
const fmt = (x: number, digits = 2) => x.toFixed(digits);

// The index: N listed addresses (HIGH or CRITICAL) with one of a few category sets, as reports leave them.
const random = rng(7);
const now = Date.parse("2026-11-21T08:00:00.000Z");
const index = new ReputationIndex(undefined, N + 16);
const listed = new Set<number>();
const MASKS = [1, 2, 4096, 4096 | 2, 1 | 32, 4];
let startedAt = performance.now();
while (listed.size < N) {
  const value = random() >>> 0;
  if (value >>> 24 === 127 || listed.has(value)) continue;
  listed.add(value);
  index.upsert(ipv4FromNumber(value), { reputationScore: random() % 50, totalReports: 3, verifiedReports: 0, categoriesMask: MASKS[random() % MASKS.length], lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now });
}
index.compact();
console.log(`# DNS query CPU: ${N.toLocaleString("en")} listed IPv4 addresses (built in ${fmt((performance.now() - startedAt) / 1000, 1)} s), ${QUERIES.toLocaleString("en")} queries a round (half listed, half never reported), best of ${ROUNDS}`);

// The queries, encoded once by dns-packet (as a resolver would send them, with EDNS).
const listedValues = Array.from(listed);
const queries: Uint8Array[] = [];
for (let i = 0; i < QUERIES; i++) {
  let value: number;
  if (i % 2 === 0) value = listedValues[random() % listedValues.length];
  else do value = random() >>> 0; while (listed.has(value) || value >>> 24 === 127);
  const name = `${value & 255}.${(value >>> 8) & 255}.${(value >>> 16) & 255}.${value >>> 24}.${ZONE}`;
  queries.push(Uint8Array.from(dnsPacket.encode({ type: "query", id: i & 0xffff, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: "A", name, class: "IN" }], additionals: [{ type: "OPT", name: ".", udpPayloadSize: 1232 }] } as dnsPacket.Packet)));
}

const allowlist = { set: new CidrSet(), onChange: () => {} } as unknown as Allowlist;
const source = { index, allowlist, expireDue: () => {}, networksAround: () => [] };
const responder = new DnsblResponder({ zone: ZONE, ttl: 300, riskLevel: "HIGH", nameServerV4: null }, new ManualClock(now));
responder.setSource(source);

// The library's way: decode to objects, apply the same rules, encode an answer built as objects.
const filters = blocklistFilters({ minimumRisk: "HIGH" });
const scratch = listingScratch();
const zoneSuffix = `.${ZONE}`;
const soa = { type: "SOA", name: ZONE, ttl: 300, class: "IN", data: { mname: `ns.${ZONE}`, rname: `hostmaster.${ZONE}`, serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: 300 } };
function libraryAnswer(packet: Uint8Array): Buffer {
  const q = dnsPacket.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.length));
  const question = q.questions![0];
  const name = question.name.toLowerCase();
  let value = -1;
  if (name.endsWith(zoneSuffix)) {
    const parts = name.slice(0, -zoneSuffix.length).split(".");
    if (parts.length === 4 && parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) < 256)) value = ((Number(parts[3]) << 24) | (Number(parts[2]) << 16) | (Number(parts[1]) << 8) | Number(parts[0])) >>> 0;
  }
  const isListed = value >= 0 && listingOfV4(index, allowlist.set, filters, value, scratch);
  const answers = isListed ? listedCodes(scratch.categories, scratch.risk as RiskCode).map((code) => ({ type: "A", name: question.name, ttl: 300, class: "IN", data: `127.${(code >>> 16) & 255}.${(code >>> 8) & 255}.${code & 255}` })) : [];
  return dnsPacket.encode({
    type: "response",
    id: q.id,
    flags: dnsPacket.AUTHORITATIVE_ANSWER | (isListed ? 0 : 3),
    questions: [question],
    answers,
    authorities: isListed ? [] : [soa],
    additionals: [{ type: "OPT", name: ".", udpPayloadSize: 1232 }],
  } as dnsPacket.Packet);
}

// The ceiling: a fixed answer with the query's id.
const fixed = responder.buffer.slice(2, 2 + responder.respond(queries[0], queries[0].length, true));
const ceilingOut = new Uint8Array(fixed.length);
function ceilingAnswer(packet: Uint8Array): number {
  ceilingOut.set(fixed);
  ceilingOut[0] = packet[0];
  ceilingOut[1] = packet[1];
  return fixed.length;
}

// The three agree on what is listed (checked once, not timed).
let agree = 0;
for (let i = 0; i < 2000; i++) {
  const ours = dnsPacket.decode(Buffer.from(responder.buffer.subarray(2, 2 + responder.respond(queries[i], queries[i].length, true))));
  const theirs = dnsPacket.decode(libraryAnswer(queries[i]));
  if (JSON.stringify(ours.answers) === JSON.stringify(theirs.answers)) agree++;
}
if (agree !== 2000) throw new Error(`ours and the library's answers differ in ${2000 - agree} of 2000 queries`);

function round(answer: (packet: Uint8Array) => unknown): { ns: number; cpuNs: number } {
  const cpu = process.cpuUsage();
  const start = performance.now();
  let sink = 0;
  for (let i = 0; i < QUERIES; i++) sink += answer(queries[i]) === null ? 1 : 0;
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  if (sink < 0) console.log(sink);
  return { ns: (ms * 1e6) / QUERIES, cpuNs: ((used.user + used.system) * 1e3) / QUERIES };
}

const best = { ours: Infinity, library: Infinity, ceiling: Infinity, oursCpu: Infinity, libraryCpu: Infinity };
for (let r = 1; r <= ROUNDS; r++) {
  const ceiling = round(ceilingAnswer);
  const ours = round((p) => responder.respond(p, p.length, true));
  const library = round(libraryAnswer);
  console.log(
    `round ${r}: ours ${fmt(ours.ns, 0)} ns/query (${fmt(1e3 / ours.ns)} M/s, CPU ${fmt(ours.cpuNs, 0)} ns), library ${fmt(library.ns, 0)} ns (${fmt(1e3 / library.ns)} M/s, CPU ${fmt(library.cpuNs, 0)} ns), ceiling ${fmt(ceiling.ns, 0)} ns; ours = ${fmt(library.ns / ours.ns, 1)}× faster than the library, ${fmt(ours.ns / ceiling.ns, 1)}× the ceiling`,
  );
  best.ours = Math.min(best.ours, ours.ns);
  best.library = Math.min(best.library, library.ns);
  best.ceiling = Math.min(best.ceiling, ceiling.ns);
  best.oursCpu = Math.min(best.oursCpu, ours.cpuNs);
  best.libraryCpu = Math.min(best.libraryCpu, library.cpuNs);
}

const vsLibrary = best.oursCpu / best.libraryCpu;
const results: [string, boolean][] = [[`ours / library CPU per query: ${fmt(vsLibrary, 3)} (target <= 0.333); ours / ceiling time ${fmt(best.ours / best.ceiling, 1)}`, vsLibrary <= 1 / 3]];
console.log(`best: ours ${fmt(best.ours, 0)} ns/query (CPU ${fmt(best.oursCpu, 0)} ns), library ${fmt(best.library, 0)} ns (CPU ${fmt(best.libraryCpu, 0)} ns), ceiling ${fmt(best.ceiling, 0)} ns`);
for (const [line, ok] of results) console.log(`${ok ? "PASS" : "FAIL"} ${line}`);
process.exit(results.every(([, ok]) => ok) ? 0 : 1);
