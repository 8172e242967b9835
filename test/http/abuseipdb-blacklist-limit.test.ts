// `/api/v2/blacklist?limit` has no maximum (docs/decisions.md): the answer is streamed from the cached list, so a
// limit past the list's length (clients send 9999999 or more to mean "everything") is the whole list, in chunks.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ipv4FromNumber } from "../../src/domain/ip";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

const LISTED = 30_000;
let h: Harness;
let poller: TestUser;

beforeAll(async () => {
  h = await createHarness();
  poller = await addUser(h, { tier: "enterprise" });
  // Straight into the index, which is all the list reads: a list long enough to take many chunks.
  const now = h.clock.now();
  for (let k = 0; k < LISTED; k++) {
    h.services.index.upsert(ipv4FromNumber(0x05000000 + k * 7), { reputationScore: k % 50, totalReports: 1, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now - (k % 900) * 1000 });
  }
});
afterAll(() => h.close());

const get = (query: string) => h.call("GET", `/api/v2/blacklist?${query}`, { headers: { key: poller.key } });

describe("blacklist limit", () => {
  test("a limit above 10,000,000 is the whole list, streamed", async () => {
    const res = await get("confidenceMinimum=25&limit=20000000&plaintext");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBeNull();
    const lines = (await res.text()).split("\n");
    expect(lines).toHaveLength(LISTED);
    expect(new Set(lines).size).toBe(LISTED);
  });

  test("the largest limit read is twelve digits", async () => {
    const res = await get("confidenceMinimum=25&limit=999999999999");
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).data).toHaveLength(LISTED);
  });

  test.each(["0", "-1", "1000000000000", "ten"])("limit=%s is 422 naming the parameter", async (limit) => {
    const res = await get(`limit=${limit}`);
    expect(res.status).toBe(422);
    expect(await bodyOf(res)).toEqual({ errors: [{ detail: "The limit must be an integer between 1 and 999999999999.", status: 422, source: { parameter: "limit" } }] });
  });
});
