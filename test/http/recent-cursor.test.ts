// GET /v1/ip/recent's keyset cursor (issue 29): `pagination.next` sent back as `cursor` gives the page after,
// the same rows as `offset` would, ties of one report time ordered by address; a bad cursor, or a cursor with an
// offset, is 400 naming the field.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let reporters: TestUser[];
let poller: TestUser;

beforeAll(async () => {
  h = await createHarness();
  poller = await addUser(h, { tier: "enterprise" });
  reporters = await Promise.all([1, 2, 3].map(() => addUser(h, { tier: "enterprise" })));
  // 23 addresses over 8 report times: several share one, so ties decide the order within a time.
  for (let i = 0; i < 23; i++) {
    if (i % 3 === 0) h.clock.advance(60_000);
    const res = await h.call("POST", "/v1/ip/report", { headers: reporters[i % 3]!.jwt, json: { ipAddress: `198.51.100.${(i * 37) % 250}`, category: "SSH", description: "x", severity: 3 } });
    expect(res.status).toBe(201);
  }
});
afterAll(() => h.close());

const page = async (query: string) => bodyOf(await h.call("GET", `/v1/ip/recent?${query}`, { headers: { "x-api-key": poller.key } }));

test("walking by cursor gives every row once, in the offset pages' order, and ends with next null", async () => {
  for (const limit of [1, 4, 7, 23, 30]) {
    const byOffset: unknown[] = [];
    for (let offset = 0; offset < 23; offset += limit) byOffset.push(...(await page(`limit=${limit}&offset=${offset}`)).data);
    const byCursor: unknown[] = [];
    let body = await page(`limit=${limit}`);
    for (;;) {
      byCursor.push(...body.data);
      expect(body.pagination.total).toBe(23);
      if (body.pagination.next === null) break;
      body = await page(`limit=${limit}&cursor=${body.pagination.next}`);
    }
    expect(byCursor).toHaveLength(23);
    expect(byCursor).toEqual(byOffset);
  }
});

test.each(["cursor=", "cursor=not-a-cursor", "cursor=%2F%2F", `cursor=${Buffer.from("12|<script>").toString("base64url")}`])("%s is 400 naming cursor", async (q) => {
  const res = await h.call("GET", `/v1/ip/recent?${q}`, { headers: { "x-api-key": poller.key } });
  expect(res.status).toBe(400);
  const body = await bodyOf(res);
  expect(body.code).toBe("validation_failed");
  expect(body.details.map((d: { field: string }) => d.field)).toEqual(["cursor"]);
});

test("a cursor with an offset is 400 naming offset", async () => {
  const next = (await page("limit=2")).pagination.next;
  const res = await h.call("GET", `/v1/ip/recent?limit=2&offset=2&cursor=${next}`, { headers: { "x-api-key": poller.key } });
  expect(res.status).toBe(400);
  expect((await bodyOf(res)).details.map((d: { field: string }) => d.field)).toEqual(["offset"]);
});
