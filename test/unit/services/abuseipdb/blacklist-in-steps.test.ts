// /api/v2/blacklist's order prepared in steps (issue 29): a list whose entries share one score (a bucket as large
// as the list) is bucketed and sorted a step at a time, with turns of the event loop between, and the countries a
// filter needs are looked up the same way; the bytes are those of the order made and sorted at once.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { ipv4FromNumber } from "../../../../src/domain/ip";
import { SELECTION_STEP_ENTRIES } from "../../../../src/services/blocklists/blocklist";
import { Blacklist, type BlacklistQuery } from "../../../../src/services/abuseipdb/blacklist";
import { ReputationIndex } from "../../../../src/index/reputation-index";
import { createHarness, type Harness } from "../../../support/harness";
import { rng } from "../../../support/random";
import { turnsTaken } from "../../../support/event-loop-watch";

const ENTRIES = 5 * SELECTION_STEP_ENTRIES;
let h: Harness;
let index: ReputationIndex;
const query = (q: Partial<BlacklistQuery> = {}): BlacklistQuery => ({ confidenceMinimum: 100, limit: 10_000_000, ipVersion: null, onlyCountries: null, exceptCountries: null, plaintext: true, ...q });
const blacklistOf = () => new Blacklist({ index, allowlist: h.services.allowlist, enrichment: h.services.enrichment, clock: h.clock, expireDue: () => {} });
const bodyText = async (body: Uint8Array | ReadableStream<Uint8Array>) => new Response(body).text();

beforeAll(async () => {
  h = await createHarness();
  index = new ReputationIndex(h.services.scoring.riskThresholds);
  const next = rng(41);
  const now = h.clock.now();
  // Every entry at score 0 (confidence 100), each reported at its own time: one bucket to sort, in no order.
  for (let i = 0; i < ENTRIES; i++) {
    const lastSeenMs = now - (next() % 5_000_000) * 1000;
    index.upsert(ipv4FromNumber((0x05000000 + (next() & 0x3fffffff)) >>> 0), { reputationScore: 0, totalReports: 1, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: lastSeenMs, lastSeenMs });
  }
}, 60_000);
afterAll(async () => {
  await h.close();
});

test("a bucket as large as the list is sorted over many turns; the answer is the order sorted at once", async () => {
  const { value, turns } = await turnsTaken(() => blacklistOf().answerInTurns(query()));
  const stepped = await bodyText(value.body);
  // The walk and the three bucketing passes take about 4 turns per step's worth of entries; the merge sort's
  // passes (log2 of the list) many more. Sorted at once, the bucket took none.
  expect(turns).toBeGreaterThan((10 * ENTRIES) / SELECTION_STEP_ENTRIES);
  const atOnce = await bodyText(blacklistOf().answer(query()).body);
  expect(stepped).toBe(atOnce);
  const lines = stepped.split("\n");
  expect(lines.length).toBe(index.v4.size);
});

test("a small limit sorts the same bucket (its newest entries are anywhere in it); the next ask sorts nothing", async () => {
  const blacklist = blacklistOf();
  const first = await turnsTaken(() => blacklist.answerInTurns(query({ limit: 10 })));
  expect(first.turns).toBeGreaterThan((10 * ENTRIES) / SELECTION_STEP_ENTRIES);
  const again = await turnsTaken(() => blacklist.answerInTurns(query({ limit: 10 })));
  expect(again.turns).toBe(0);
  expect(await bodyText(again.value.body)).toBe(await bodyText(first.value.body));
  expect((await bodyText(first.value.body)).split("\n").length).toBe(10);
});

test("a country filter: the countries looked up in steps, the same entries as at once", async () => {
  const blacklist = blacklistOf();
  await blacklist.answerInTurns(query()); // walked, bucketed and sorted: what follows only looks countries up
  for (const q of [query({ onlyCountries: new Set(["US", "DE"]) }), query({ exceptCountries: new Set(["US"]), plaintext: false, limit: 500 })]) {
    const { value, turns } = await turnsTaken(() => blacklist.answerInTurns(q));
    const stepped = await bodyText(value.body);
    const atOnce = await bodyText(blacklistOf().answer(q).body);
    expect(stepped.replace(/"generatedAt":"[^"]*"/, "")).toBe(atOnce.replace(/"generatedAt":"[^"]*"/, ""));
    expect(stepped.length).toBeGreaterThan(0);
    // The first filter looks every entry's country up (8 units of a step each); the second finds them known.
    if (q.onlyCountries !== null) expect(turns).toBeGreaterThanOrEqual((8 * ENTRIES) / SELECTION_STEP_ENTRIES - 1);
    else expect(turns).toBeLessThan((2 * ENTRIES) / SELECTION_STEP_ENTRIES);
  }
});
