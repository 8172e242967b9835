// One pull planned against a cursor and a filter's journal (contract 14): entered in new, left in deleted (IPv6 ones
// with the value the journal kept), about to run out in both, the removal log for a bouncer without a cursor, the
// work counted (what changed, not the list), and the body streamed whole as LAPI's JSON.

import { expect, test } from "bun:test";
import { v4DecisionId, v6DecisionId } from "../../../../src/domain/decisions";
import { formatIpv4, ipv4Mask, parseIp } from "../../../../src/domain/ip";
import { Database } from "bun:sqlite";
import { FilterJournal } from "../../../../src/services/bouncers/decision-journal";
import { type PullPlan, decisionJson, planPull, streamPull } from "../../../../src/services/bouncers/decision-stream";
import { DecisionJournalTables } from "../../../../src/store/decision-journal";

const words = (text: string) => (parseIp(text) as { words: Uint32Array }).words;
const STAY = v4DecisionId(0x0a000001, 32);
const NEW = v4DecisionId(0x0a000002, 32);
const GONE6 = v6DecisionId(words("2001:db8::1"), 128);
const NOW = Date.parse("2026-11-24T12:00:00Z");
const DURATION = 3600 * 596;

/** A journal over an in-memory database whose list is whatever `listed` holds when it is synced. */
function journalOf(initial: number[], values: Record<number, string> = {}) {
  let listed = initial;
  let state = 0;
  const journal = new FilterJournal("test", new DecisionJournalTables(new Database(":memory:"), true), () => ({
    ids: Float64Array.from([...listed].sort((a, b) => a - b)),
    v6: new Map(listed.filter((id) => values[id] !== undefined).map((id) => [id, { value: values[id], scope: "Ip" as const }])),
  }));
  const set = (ids: number[], at = NOW) => {
    listed = ids;
    journal.sync(++state, 0, at);
  };
  set(initial);
  return { journal, set };
}

const body = async (plan: PullPlan) =>
  JSON.parse(await new Response(streamPull(plan, NOW, DURATION, () => "abuse-intel/high", () => {})).text()) as { new: { value: string }[]; deleted: { value: string; scope: string }[] };

test("entered in new, left in deleted with its IPv6 value; the work is the changes, not the list", async () => {
  const many = Array.from({ length: 10_000 }, (_, i) => v4DecisionId(0x0b000000 + i, 32));
  const { journal, set } = journalOf([STAY, GONE6, ...many], { [GONE6]: "2001:db8::1" });
  const work = { entriesVisited: 0 };
  const first = planPull(journal, null, true, NOW, DURATION, work);
  set([STAY, NEW, ...many]);
  work.entriesVisited = 0;
  const plan = planPull(journal, first.next, false, NOW + 10_000, DURATION, work);
  expect([...plan.added[0]]).toEqual([NEW]);
  expect([...plan.deleted[0]]).toEqual([GONE6]);
  expect(work.entriesVisited).toBe(2);
  const answer = await body(plan);
  expect(answer.new.map((d) => d.value)).toEqual(["10.0.0.2"]);
  expect(answer.deleted).toEqual([expect.objectContaining({ value: "2001:db8::1", scope: "Ip", type: "ban" })]);
  // Nothing changed since: nothing looked at.
  work.entriesVisited = 0;
  const empty = planPull(journal, plan.next, false, NOW + 20_000, DURATION, work);
  expect(work.entriesVisited).toBe(0);
  expect(await body(empty)).toEqual({ new: [], deleted: [] });
});

test("an entry that left and entered again since the cursor is sent in deleted and new; one that entered and left, not at all", () => {
  const { journal, set } = journalOf([STAY]);
  const work = { entriesVisited: 0 };
  const first = planPull(journal, null, true, NOW, DURATION, work);
  set([]);
  set([STAY, NEW]);
  set([STAY]);
  const plan = planPull(journal, first.next, false, NOW, DURATION, work);
  expect([...plan.added[0]]).toEqual([STAY]);
  expect([...plan.deleted[0]]).toEqual([STAY]);
});

test("entries due to be sent again come from the refresh queue's head: only that batch's entries are looked at", () => {
  const duration = 7200;
  const early = Array.from({ length: 100 }, (_, i) => v4DecisionId(0x0c000000 + i, 32));
  const late = Array.from({ length: 5_000 }, (_, i) => v4DecisionId(0x0d000000 + i, 32));
  const { journal, set } = journalOf(early);
  const work = { entriesVisited: 0 };
  const first = planPull(journal, null, true, NOW, duration, work);
  set([...early, ...late], NOW + 1800_000);
  const second = planPull(journal, first.next, false, NOW + 1800_000, duration, work);
  expect(second.added[0].length).toBe(late.length);
  // 3,601 s after the first pull the early batch is due (an hour before its end), the late one is not.
  work.entriesVisited = 0;
  const due = planPull(journal, second.next, false, NOW + 3601_000, duration, work);
  expect([...due.added[0]].sort()).toEqual([...early].sort());
  expect([...due.deleted[0]].sort()).toEqual([...early].sort());
  expect(work.entriesVisited).toBe(early.length);
  expect(due.next.refreshQueue.map((b) => b[0])).toEqual([(NOW + 1800_000) / 1000, (NOW + 3601_000) / 1000]);
  work.entriesVisited = 0;
  const quiet = planPull(journal, due.next, false, NOW + 3700_000, duration, work);
  expect(quiet.added[0].length + quiet.deleted[0].length + work.entriesVisited).toBe(0);
});

test("no cursor: everything listed in new, and what left within the duration (the removal log) in deleted", async () => {
  const { journal, set } = journalOf([STAY, NEW, GONE6], { [GONE6]: "2001:db8::1" });
  set([STAY, NEW], NOW - (DURATION + 60) * 1000);
  set([STAY], NOW - 60_000);
  const plan = planPull(journal, null, false, NOW, DURATION, { entriesVisited: 0 });
  const answer = await body(plan);
  // GONE6 left before the bouncer's duration: whatever held it has dropped it.
  expect(answer.new.map((d) => d.value)).toEqual(["10.0.0.1"]);
  expect(answer.deleted.map((d) => d.value)).toEqual(["10.0.0.2"]);
});

test("changes older than 620 hours are dropped: a cursor from before them answers as none", () => {
  const a = v4DecisionId(0x0a000010, 32);
  const b = v4DecisionId(0x0a000011, 32);
  const c = v4DecisionId(0x0a000012, 32);
  const { journal, set } = journalOf([a, b]);
  const work = { entriesVisited: 0 };
  const old = planPull(journal, null, true, NOW, DURATION, work);
  set([a], NOW + 3600_000);
  expect(journal.removedSince(0).map((r) => r.id)).toEqual([b]);
  set([a, c], NOW + 622 * 3600_000);
  expect(journal.removedSince(0)).toEqual([]);
  expect(journal.prunedSeq).toBeGreaterThan(old.next.seq);
  // Its bouncer gets everything listed, and no removal it can no longer be told of.
  const plan = planPull(journal, old.next, false, NOW + 622 * 3600_000, DURATION, work);
  expect([...plan.added[0]]).toEqual([a, c]);
  expect([...plan.deleted[0]]).toEqual([]);
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
  const v6 = new Map([[known6, "2001:db8::7"]]);
  const plan: PullPlan = { added: [ids], deleted: [], v6Value: (id) => v6.get(id), next: { lastPullAt: NOW, filterKey: "test", seq: 1, refreshQueue: [], legacy: null } };
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
