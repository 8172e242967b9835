// Blocklists and the AbuseIPDB blacklist selected in steps (issue 29): a list not cached at the index's state is
// walked a step at a time with turns of the event loop between, so requests are served meanwhile; the answer is
// still the list of one state (a change during the walk walks again), byte for byte what the walk at once gives.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { blocklistFilters } from "../../../../src/domain/blocklist/query";
import { type Ip, ipv4FromNumber, tryParseCidr } from "../../../../src/domain/ip";
import { Pace } from "../../../../src/domain/pace";
import { Blacklist, type BlacklistQuery } from "../../../../src/services/abuseipdb/blacklist";
import { SELECTION_STEP_ENTRIES, type BlocklistAnswer, selectBlocklist, selectBlocklistInSteps } from "../../../../src/services/blocklists/blocklist";
import { createHarness, type Harness } from "../../../support/harness";
import { rng } from "../../../support/random";
import { turnsTaken } from "../../../support/event-loop-watch";

const ADDRESSES = 4 * SELECTION_STEP_ENTRIES;
const record = (score: number, lastSeenMs: number) => ({ reputationScore: score, totalReports: 1, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: lastSeenMs - 86_400_000, lastSeenMs });

let h: Harness;
let blacklist: Blacklist;
const query = (q: Partial<BlacklistQuery> = {}): BlacklistQuery => ({ confidenceMinimum: 25, limit: 10_000_000, ipVersion: null, onlyCountries: null, exceptCountries: null, plaintext: true, ...q });

beforeAll(async () => {
  h = await createHarness();
  const next = rng(29);
  const now = h.clock.now();
  for (let i = 0; i < ADDRESSES; i++) h.services.index.upsert(ipv4FromNumber((0x0b000000 + (next() & 0x00ffffff)) >>> 0), record(next() % 101, now - (next() % 1000) * 60_000));
  const network = tryParseCidr("11.2.0.0/16");
  if (typeof network === "string") throw new Error(network);
  h.services.index.upsertNetwork(network, record(30, now));
  blacklist = new Blacklist({ index: h.services.index, allowlist: h.services.allowlist, enrichment: h.services.enrichment, clock: h.clock, expireDue: () => h.services.reputation.expireDue() });
}, 60_000);
afterAll(async () => {
  await h.close();
});

const bodyText = async (body: Uint8Array | ReadableStream<Uint8Array>) => new Response(body).text();
const listText = async (answer: BlocklistAnswer) => (answer.status === 200 ? bodyText(answer.body) : "");
const fresh = (i: number): Ip => ipv4FromNumber((0x0c000000 + i) >>> 0);

describe("the walk in steps", () => {
  test("yields after every step's worth of entries and selects what the walk at once does", () => {
    const filters = blocklistFilters({ minimumRisk: "LOW", ipVersion: null, maximumScore: 100 });
    const steps = selectBlocklistInSteps(h.services.index, h.services.allowlist.set, filters, { details: true }, new Pace(1000));
    let yields = 0;
    let next = steps.next();
    for (; !next.done; next = steps.next()) yields++;
    const entries = h.services.index.v4.size + h.services.index.v6.size;
    expect(yields).toBe(Math.floor(entries / 1000));
    expect(next.value).toEqual(selectBlocklist(h.services.index, h.services.allowlist.set, filters, { details: true }));
  });
});

describe("GET /v1/ip/blocklist's list (BlocklistService.answerInTurns)", () => {
  test("a list not cached is walked over several turns of the event loop; the same bytes and ETag as at once", async () => {
    h.services.index.touch();
    const { value: stepped, turns } = await turnsTaken(() => h.services.blocklists.answerInTurns({ format: "txt", riskLevel: "LOW" }, null));
    // At least a turn after each step: without steps the walk took none.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(ADDRESSES / SELECTION_STEP_ENTRIES) - 1);
    const atOnce = h.services.blocklists.answer({ format: "txt", riskLevel: "LOW" }, null);
    expect(stepped.etag).toBe(atOnce.etag);
    expect(await listText(stepped)).toBe(await listText(atOnce));
    // Cached now: the next ask takes no turn.
    expect((await turnsTaken(() => h.services.blocklists.answerInTurns({ format: "txt", riskLevel: "LOW" }, null))).turns).toBe(0);
  });

  test("a change during the walk walks again: the answer is the list after the change, under that state's ETag", async () => {
    h.services.index.touch();
    let added = 0;
    const changing = () => {
      // Two changes during the walks, each after the walk's first step.
      if (added < 2) h.services.index.upsert(fresh(added++), record(0, h.clock.now()));
    };
    setImmediate(changing);
    const pending = h.services.blocklists.answerInTurns({ format: "txt", riskLevel: "LOW" }, null);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    setImmediate(changing);
    const answer = await pending;
    expect(added).toBe(2);
    const text = await listText(answer);
    expect(text.includes(`\n${fresh(0).text}\n`) && text.includes(`\n${fresh(1).text}\n`)).toBe(true);
    const now = h.services.blocklists.answer({ format: "txt", riskLevel: "LOW" }, answer.status === 200 ? answer.etag : null);
    expect(now.status).toBe(304);
  });

  test("bad parameters are refused before any walk", async () => {
    await expect(h.services.blocklists.answerInTurns({ format: "xml" }, null)).rejects.toThrow();
  });
});

describe("/api/v2/blacklist's order (Blacklist.answerInTurns)", () => {
  test("a list not cached is walked over several turns of the event loop, one walk, the same bytes as at once", async () => {
    h.services.index.touch();
    const walks = blacklist.walks;
    const { value, turns } = await turnsTaken(() => blacklist.answerInTurns(query()));
    expect(turns).toBeGreaterThanOrEqual(Math.floor(ADDRESSES / SELECTION_STEP_ENTRIES) - 1);
    expect(blacklist.walks).toBe(walks + 1);
    const stepped = await bodyText(value.body);
    expect(await bodyText(blacklist.answer(query()).body)).toBe(stepped);
    expect(blacklist.walks).toBe(walks + 1);
    expect(stepped.split("\n").length).toBeGreaterThan(ADDRESSES / 2);
  });

  test("an allowlist change during the walk walks again: the answer leaves the allowlisted address out", async () => {
    const first = (await bodyText(blacklist.answer(query()).body)).split("\n")[0]!;
    h.services.index.touch();
    const pending = blacklist.answerInTurns(query());
    await new Promise((resolve) => setImmediate(resolve));
    h.services.allowlist.add(`${first}/32`, "during the walk", null);
    const text = await bodyText((await pending).body);
    expect(text.split("\n").includes(first)).toBe(false);
    h.services.allowlist.remove(`${first}/32`);
  });
});
