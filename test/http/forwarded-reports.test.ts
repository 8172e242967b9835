// POST /v1/reports/forwarded (contract 18) through HTTP: an API key in place of a JWT, each report through the
// intake (credited to the key's account, scored, its webhook event), a batch sent twice stored once with the first
// results again, a refusal per report (invalid, a duplicate for the forward account, a time past retention), and
// the reports of one request stored or refused together.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let edgeAccount: TestUser;
let next = 0;
const freshIp = () => `198.18.${Math.floor(++next / 250)}.${(next % 250) + 1}`;
const count = (sql: string, ...params: (string | number)[]) => (h.store.sqlite.query(sql).get(...params) as { n: number }).n;

beforeAll(async () => {
  h = await createHarness();
  edgeAccount = await addUser(h, { tier: "enterprise" });
});
afterAll(() => h.close());
beforeEach(() => h.clock.set("2026-11-21T08:00:00.000Z"));

let ids = 0;
function item(ip: string, extra: Record<string, unknown> = {}) {
  const id = `r${++ids}`;
  return { id, group: `g${id}`, at: h.clock.now(), ownTime: false, source: "api", report: { ip, category: "ssh", severity: 4, description: "edge", evidence: null }, ...extra };
}
const forward = (reports: unknown[], headers: Record<string, string> = edgeAccount.apiKey) => h.call("POST", "/v1/reports/forwarded", { headers, json: { reports } });

describe("POST /v1/reports/forwarded", () => {
  test("takes an API key; each report is stored, credited to the key's account and scored", async () => {
    const ip = freshIp();
    const res = await forward([item(ip)]);
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body.success).toBe(true);
    expect(body.data.results).toEqual([{ id: `r${ids}`, status: "accepted", reportId: expect.any(String) }]);
    expect(count("SELECT count(*) AS n FROM reports WHERE ip = ? AND reporter_id = ?", ip, edgeAccount.user.id)).toBe(1);
    const balance = await bodyOf(await h.call("GET", "/v1/credits/balance", { headers: edgeAccount.jwt }));
    expect(balance.data.balance).toBeGreaterThan(0);
    const rep = await bodyOf(await h.call("GET", `/v1/ip/${ip}/reputation`, { headers: edgeAccount.apiKey }));
    expect(rep.data.totalReports).toBe(1);
  });

  test("without a credential: 401, nothing stored", async () => {
    const ip = freshIp();
    expect((await forward([item(ip)], {})).status).toBe(401);
    expect(count("SELECT count(*) AS n FROM reports WHERE ip = ?", ip)).toBe(0);
  });

  test("a batch sent twice stores each report once and answers the first results again", async () => {
    const a = freshIp();
    const b = freshIp();
    const batch = [item(a), item(b), item(a, { report: { ip: a, category: "web_attack", severity: 2, description: "", evidence: null } })];
    const first = await bodyOf(await forward(batch));
    expect(first.data.results.map((r: { status: string }) => r.status)).toEqual(["accepted", "accepted", "refused"]);
    expect(first.data.results[2].code).toBe("duplicate_report");
    h.clock.advance(60 * 60_000);
    const second = await bodyOf(await forward(batch));
    expect(second.data.results).toEqual(first.data.results);
    expect(count("SELECT count(*) AS n FROM reports WHERE ip IN (?, ?)", a, b)).toBe(2);
    // Two copies of one batch at once (an answer lost while the first was still being written): still once.
    const c = freshIp();
    const again = [item(c)];
    const [x, y] = await Promise.all([forward(again), forward(again)]);
    expect((await bodyOf(x)).data.results).toEqual((await bodyOf(y)).data.results);
    expect(count("SELECT count(*) AS n FROM reports WHERE ip = ?", c)).toBe(1);
  });

  test("the reports of one request are stored together and count once for the duplicate rule", async () => {
    const ip = freshIp();
    const group = "one-request";
    const batch = [
      item(ip, { group, source: "abuseipdb", report: { ip, category: "ssh", severity: 3, description: "", evidence: null } }),
      item(ip, { group, source: "abuseipdb", report: { ip, category: "brute_force", severity: 3, description: "", evidence: null } }),
    ];
    const body = await bodyOf(await forward(batch));
    expect(body.data.results.map((r: { status: string }) => r.status)).toEqual(["accepted", "accepted"]);
    expect(count("SELECT count(*) AS n FROM reports WHERE ip = ? AND source = 'abuseipdb'", ip)).toBe(2);
  });

  test("an invalid report is refused alone, with its reason; the others of the batch are stored", async () => {
    const good = freshIp();
    const body = await bodyOf(await forward([item("127.0.0.1"), item(good)]));
    expect(body.data.results[0]).toMatchObject({ status: "refused", code: "validation_failed" });
    expect(body.data.results[1]).toMatchObject({ status: "accepted" });
  });

  test("a report keeps its own time; one older than retention, or far ahead, is refused", async () => {
    const ip = freshIp();
    const twoDaysAgo = h.clock.now() - 2 * 86_400_000;
    const body = await bodyOf(await forward([item(ip, { at: twoDaysAgo, ownTime: true }), item(freshIp(), { at: h.clock.now() - 400 * 86_400_000, ownTime: true }), item(freshIp(), { at: h.clock.now() + 3_600_000, ownTime: true })]));
    expect(body.data.results.map((r: { status: string }) => r.status)).toEqual(["accepted", "refused", "refused"]);
    expect(count("SELECT count(*) AS n FROM reports WHERE ip = ? AND created_at = ?", ip, twoDaysAgo)).toBe(1);
  });

  test("a malformed batch is 400 as a whole and stores nothing", async () => {
    const before = count("SELECT count(*) AS n FROM reports");
    expect((await h.call("POST", "/v1/reports/forwarded", { headers: edgeAccount.apiKey, json: { nope: 1 } })).status).toBe(400);
    expect((await forward([item(freshIp()), { ...item(freshIp()), id: "bad id!" }])).status).toBe(400);
    expect((await forward([])).status).toBe(400);
    expect(count("SELECT count(*) AS n FROM reports")).toBe(before);
  });
});
