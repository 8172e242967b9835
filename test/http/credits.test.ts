// GET /v1/credits/balance and /v1/credits/history (contract 5.6): exact totals after reports, verification and
// rejection; the ledger newest first with pagination and its query rules; each user sees only their own.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let carol: TestUser;
let dave: TestUser;
let erin: TestUser;
let admin: TestUser;

async function jwt(user: TestUser) {
  const { accessToken } = await h.services.credentials.issueToken(user.user);
  return { authorization: `Bearer ${accessToken}` };
}
const get = async (user: TestUser, path: string) => h.call("GET", path, { headers: await jwt(user) });
const report = async (user: TestUser, ip: string) => bodyOf(await h.call("POST", "/v1/ip/report", { headers: await jwt(user), json: { ip, category: "SSH" } }));

// carol: three reports at 08:00, 08:01, 08:02 (ids 1..3). dave and erin report carol's first address too
// (ids 4, 5), so community verification at 08:03 verifies 1, 4 and 5. At 08:04 an admin rejects carol's report 2.
beforeAll(async () => {
  h = await createHarness();
  [carol, dave, erin] = [await addUser(h, { tier: "pro" }), await addUser(h, { tier: "pro" }), await addUser(h, { tier: "pro" })];
  admin = await addUser(h, { role: "admin", tier: "enterprise" });
  h.clock.set("2026-11-21T08:00:00.000Z");
  await report(carol, "203.0.113.1");
  h.clock.advance(60_000);
  await report(carol, "203.0.113.2");
  h.clock.advance(60_000);
  await report(carol, "203.0.113.3");
  await report(dave, "203.0.113.1");
  await report(erin, "203.0.113.1");
  h.clock.advance(60_000);
  expect(h.services.reportStates.verifyCommunity(h.clock.now())).toEqual({ groups: 1, verified: 3 });
  h.clock.advance(60_000);
  expect((await h.call("PATCH", "/v1/admin/reports/2", { headers: await jwt(admin), json: { status: "rejected" } })).status).toBe(200);
});
afterAll(() => h.close());

describe("GET /v1/credits/balance", () => {
  test("exact totals: +1 per report, +2 per verified report, −1 for the rejected one", async () => {
    const res = await get(carol, "/v1/credits/balance");
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({
      success: true,
      data: { balance: 4, lifetimeEarned: 5, reportsAccepted: 3, reportsVerified: 1, updatedAt: "2026-11-21T08:04:00.000Z" },
    });
    expect((await bodyOf(await get(dave, "/v1/credits/balance"))).data).toEqual({
      balance: 3,
      lifetimeEarned: 3,
      reportsAccepted: 1,
      reportsVerified: 1,
      updatedAt: "2026-11-21T08:03:00.000Z",
    });
  });

  test("an account that never earned a credit has zeros and no updatedAt", async () => {
    expect((await bodyOf(await get(admin, "/v1/credits/balance"))).data).toEqual({ balance: 0, lifetimeEarned: 0, reportsAccepted: 0, reportsVerified: 0, updatedAt: null });
  });

  test("needs a user access token", async () => {
    expect((await h.call("GET", "/v1/credits/balance")).status).toBe(401);
    expect((await h.call("GET", "/v1/credits/balance", { headers: carol.apiKey })).status).toBe(401);
  });
});

describe("GET /v1/credits/history", () => {
  const carolsLedger = () => [
    { delta: -1, reason: "report_rejected", reportId: "2", createdAt: "2026-11-21T08:04:00.000Z" },
    { delta: 2, reason: "report_verified", reportId: "1", createdAt: "2026-11-21T08:03:00.000Z" },
    { delta: 1, reason: "report_accepted", reportId: "3", createdAt: "2026-11-21T08:02:00.000Z" },
    { delta: 1, reason: "report_accepted", reportId: "2", createdAt: "2026-11-21T08:01:00.000Z" },
    { delta: 1, reason: "report_accepted", reportId: "1", createdAt: "2026-11-21T08:00:00.000Z" },
  ];

  test("the ledger rows newest first, with the default page (limit 20, offset 0)", async () => {
    const body = await bodyOf(await get(carol, "/v1/credits/history"));
    expect(body.success).toBe(true);
    expect(body.pagination).toEqual({ limit: 20, offset: 0, total: 5 });
    expect(body.data.map(({ id: _id, ...rest }: { id: string }) => rest)).toEqual(carolsLedger());
    const ids = body.data.map((r: { id: string }) => Number(r.id));
    expect(body.data.every((r: { id: string }) => /^[1-9]\d*$/.test(r.id))).toBe(true);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    // The rows add up to the balance.
    expect(body.data.reduce((sum: number, r: { delta: number }) => sum + r.delta, 0)).toBe(4);
  });

  test("limit and offset page through it", async () => {
    const page = async (q: string) => bodyOf(await get(carol, `/v1/credits/history?${q}`));
    const second = await page("limit=2&offset=2");
    expect(second.pagination).toEqual({ limit: 2, offset: 2, total: 5 });
    expect(second.data.map((r: { reason: string; reportId: string }) => [r.reason, r.reportId])).toEqual([
      ["report_accepted", "3"],
      ["report_accepted", "2"],
    ]);
    expect((await page("limit=2&offset=4")).data.length).toBe(1);
    expect((await page("offset=5")).data).toEqual([]);
    expect((await page("limit=100")).data.length).toBe(5);
    expect((await page("limit=1")).data.map((r: { reason: string }) => r.reason)).toEqual(["report_rejected"]);
  });

  const invalid: [string, string[]][] = [
    ["limit=0", ["limit"]],
    ["limit=101", ["limit"]],
    ["limit=-1", ["limit"]],
    ["limit=abc", ["limit"]],
    ["limit=1.5", ["limit"]],
    ["limit=", ["limit"]],
    ["offset=-1", ["offset"]],
    ["offset=x", ["offset"]],
    ["limit=0&offset=-1", ["limit", "offset"]],
  ];
  for (const [query, fields] of invalid) {
    test(`?${query} is 400`, async () => {
      const res = await get(carol, `/v1/credits/history?${query}`);
      expect(res.status).toBe(400);
      const body = await bodyOf(res);
      expect(body.code).toBe("validation_failed");
      expect(body.details.map((d: { field: string }) => d.field)).toEqual(fields);
    });
  }

  test("each user sees only their own rows", async () => {
    const body = await bodyOf(await get(erin, "/v1/credits/history"));
    expect(body.pagination.total).toBe(2);
    expect(body.data.map((r: { delta: number; reportId: string }) => [r.delta, r.reportId])).toEqual([
      [2, "5"],
      [1, "5"],
    ]);
    expect((await bodyOf(await get(admin, "/v1/credits/history"))).pagination.total).toBe(0);
  });
});
