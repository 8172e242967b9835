// One pull planned against a cursor (contract 14): entered in new, left in deleted (IPv6 ones with the value the
// cursor kept), about to run out in both, and the body streamed whole as LAPI's JSON.

import { expect, test } from "bun:test";
import { v4DecisionId, v6DecisionId } from "../../../../src/domain/decisions";
import { formatIpv4, ipv4Mask, parseIp } from "../../../../src/domain/ip";
import { decisionJson, planPull, streamPull } from "../../../../src/services/bouncers/decision-stream";

const words = (text: string) => (parseIp(text) as { words: Uint32Array }).words;
const STAY = v4DecisionId(0x0a000001, 32);
const NEW = v4DecisionId(0x0a000002, 32);
const GONE6 = v6DecisionId(words("2001:db8::1"), 128);
const NOW = Date.parse("2026-11-24T12:00:00Z");

test("entered in new, left in deleted with its IPv6 value, kept ones not sent again", async () => {
  const ids = Float64Array.from([STAY, NEW].sort((a, b) => a - b));
  const cursor = { lastPullAt: NOW - 10_000, ids: Float64Array.from([STAY, GONE6].sort((a, b) => a - b)), sentAt: Uint32Array.from([NOW / 1000 - 10, NOW / 1000 - 10]), v6Values: { [GONE6]: "2001:db8::1" } };
  const plan = planPull({ ids, v6: new Map() }, cursor, false, NOW, 3600 * 596);
  expect([...plan.added]).toEqual([NEW]);
  expect([...plan.deleted]).toEqual([GONE6]);
  const body = JSON.parse(await new Response(streamPull(plan, NOW, 3600 * 596, () => "abuse-intel/high", () => {})).text()) as { new: { value: string }[]; deleted: { value: string; scope: string }[] };
  expect(body.new.map((d) => d.value)).toEqual(["10.0.0.2"]);
  expect(body.deleted).toEqual([expect.objectContaining({ value: "2001:db8::1", scope: "Ip", type: "ban" })]);
  expect([...plan.next.ids]).toEqual([...ids]);
});

test("an entry about to run out is sent again, in deleted and new of the same answer", () => {
  const ids = Float64Array.from([STAY]);
  const duration = 7200;
  const cursor = { lastPullAt: NOW, ids, sentAt: Uint32Array.from([NOW / 1000 - 3601]), v6Values: {} };
  const plan = planPull({ ids, v6: new Map() }, cursor, false, NOW, duration);
  expect([...plan.added]).toEqual([STAY]);
  expect([...plan.deleted]).toEqual([STAY]);
  expect(plan.next.sentAt[0]).toBe(NOW / 1000);
});

test("held entries out of the pull stay in the cursor with their times, in id order, and are neither deleted nor sent", () => {
  const [a, b, c, d, e] = [10, 20, 30, 40, 50].map((n) => v4DecisionId(0x0a000000 + n, 32));
  const held6 = v6DecisionId(words("2001:db8::9"), 128);
  const old = [a, b, c, d, held6];
  const cursor = { lastPullAt: NOW, ids: Float64Array.from(old), sentAt: Uint32Array.from([1, 2, 3, 4, 5].map((k) => NOW / 1000 - k)), v6Values: { [held6]: "2001:db8::9" } };
  const out = new Set([a, d, held6]);
  const plan = planPull({ ids: Float64Array.from([b, e]), v6: new Map() }, cursor, false, NOW, 3600 * 596, (id) => out.has(id));
  expect([...plan.added]).toEqual([e]);
  expect([...plan.deleted]).toEqual([c]);
  expect([...plan.next.ids]).toEqual([a, b, d, e, held6]);
  expect([...plan.next.sentAt]).toEqual([NOW / 1000 - 1, NOW / 1000 - 2, NOW / 1000 - 4, NOW / 1000, NOW / 1000 - 5]);
  expect(plan.next.v6Values).toEqual({ [held6]: "2001:db8::9" });
});

// The decisions as the string template before them wrote them (which the real bouncer's tests accepted): the bytes
// written now must be the same, for IPv4 addresses and ranges, IPv6 ones, and ids across their whole span.
function referenceDecision(id: number, value: string, scope: "Ip" | "Range", tail: string, scenario: string): string {
  const hex = id.toString(16).padStart(20, "0");
  return `{"id":${id},"uuid":"ab5e1ce0-${hex.slice(0, 4)}-4${hex.slice(4, 7)}-8${hex.slice(7, 10)}-${hex.slice(10, 20)}00","origin":"abuse-intel","type":"ban","scope":"${scope}","value":"${value}${tail}${scenario}"}`;
}

test("each decision is written byte for byte as the string template wrote it", () => {
  const seconds = 3600 * 596;
  const until = NOW + seconds * 1000;
  const tail = `","duration":"596h0m0s","until":"${new Date(until).toISOString().slice(0, 19)}Z","scenario":"`;
  const cases: [number, string | null, string, "Ip" | "Range"][] = [
    [v4DecisionId(0, 32), null, "0.0.0.0", "Ip"],
    [v4DecisionId(0xffffffff, 32), null, "255.255.255.255", "Ip"],
    [v4DecisionId(0xc0a80000, 16), null, "192.168.0.0/16", "Range"],
    [v4DecisionId(0, 0), null, "0.0.0.0/0", "Range"],
    [v6DecisionId(words("2001:db8::1"), 128), "2001:db8::1", "2001:db8::1", "Ip"],
    [v6DecisionId(words("2001:db8::"), 32), "2001:db8::/32", "2001:db8::/32", "Range"],
  ];
  let seed = 7;
  for (let i = 0; i < 2_000; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const length = 8 + (seed % 25);
    const address = (((seed * 2654435761) >>> 0) & ipv4Mask(length)) >>> 0;
    cases.push([v4DecisionId(address, length), null, length === 32 ? formatIpv4(address) : `${formatIpv4(address)}/${length}`, length === 32 ? "Ip" : "Range"]);
  }
  for (const [id, v6Value, value, scope] of cases) {
    expect(decisionJson(id, v6Value, seconds, until, "abuse-intel/high")).toBe(referenceDecision(id, value, scope, tail, "abuse-intel/high"));
  }
});

test("a body of many chunks is one JSON document, in id order, skipping IPv6 ids whose value is unknown", async () => {
  const v4 = Array.from({ length: 5_000 }, (_, i) => v4DecisionId(0x0b000000 + i * 256, i % 3 === 0 ? 24 : 32));
  const known6 = v6DecisionId(words("2001:db8::7"), 128);
  const unknown6 = v6DecisionId(words("2001:db8::8"), 128);
  const ids = Float64Array.from([...v4, known6, unknown6].sort((a, b) => a - b));
  const plan = planPull({ ids, v6: new Map([[known6, { value: "2001:db8::7", scope: "Ip" as const }]]) }, null, true, NOW, 3600);
  let chunks = 0;
  const reader = streamPull(plan, NOW, 3600, () => "abuse-intel/high", () => {}).getReader();
  const parts: Uint8Array[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    chunks++;
    parts.push(r.value);
  }
  const body = JSON.parse(await new Blob(parts).text()) as { new: { id: number; value: string }[]; deleted: unknown[] };
  expect(chunks).toBeGreaterThan(2);
  expect(body.deleted).toEqual([]);
  const expected = [...ids].filter((id) => id !== unknown6);
  expect(body.new.map((d) => d.id)).toEqual(expected);
  expect(body.new.find((d) => d.id === known6)?.value).toBe("2001:db8::7");
});
