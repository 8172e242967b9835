// One pull planned against a cursor (contract 14): entered in new, left in deleted (IPv6 ones with the value the
// cursor kept), about to run out in both, and the body streamed whole as LAPI's JSON.

import { expect, test } from "bun:test";
import { v4DecisionId, v6DecisionId } from "../../../../src/domain/decisions";
import { parseIp } from "../../../../src/domain/ip";
import { planPull, streamPull } from "../../../../src/services/bouncers/decision-stream";

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
