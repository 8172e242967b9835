import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let reporter: TestUser;
let reporter2: TestUser;
let admin: TestUser;

const report = (who: TestUser, json: Record<string, unknown>) => h.call("POST", "/v1/ip/report", { headers: who.jwt, json });
const get = (path: string, who: TestUser = reporter) => h.call("GET", path, { headers: who.apiKey });

beforeAll(async () => {
  h = await createHarness();
  reporter = await addUser(h, { tier: "enterprise" });
  reporter2 = await addUser(h, { tier: "enterprise" });
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
});
afterAll(() => h.close());

describe("GET /v1/ip/{ip} (5.1)", () => {
  test("an address never reported: 200 with zero reports, low threat, enrichment from the embedded data", async () => {
    const res = await get("/v1/ip/8.8.8.8");
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({
      success: true,
      ip: "8.8.8.8",
      country: "United States",
      countryCode: "US",
      city: null,
      isp: "Google LLC",
      asn: 15169,
      reports: 0,
      verifiedReports: 0,
      threatLevel: "low",
      abuse_confidence: 0,
      reputationScore: 100,
      categories: [],
      firstSeen: null,
      lastSeen: null,
      isAllowlisted: false,
      networks: [],
    });
  });

  test("unknown enrichment is null, never an empty string", async () => {
    const body = await bodyOf(await get("/v1/ip/10.1.2.3"));
    expect([body.country, body.countryCode, body.city, body.isp, body.asn]).toEqual([null, null, null, null, null]);
  });

  test("a reported address shows its score, counts, categories and dates", async () => {
    const created = await report(reporter, { ipAddress: "203.0.113.7", category: "brute-force", description: "ssh", severity: 5 });
    expect(created.status).toBe(201);
    const body = await bodyOf(await get("/v1/ip/203.0.113.7"));
    expect(body).toMatchObject({
      ip: "203.0.113.7",
      reports: 1,
      verifiedReports: 0,
      threatLevel: "medium",
      abuse_confidence: 49,
      reputationScore: 51,
      categories: ["BRUTE_FORCE"],
      firstSeen: "2026-11-21T08:00:00.000Z",
      lastSeen: "2026-11-21T08:00:00.000Z",
    });
  });

  test.each([
    ["010.0.0.1", 400],
    ["1.2.3.4%25eth0", 400],
    ["1.2.3.0%2F24", 400],
    ["not-an-ip", 400],
    ["%201.2.3.4", 400],
  ])("%s is refused with %d", async (raw, status) => {
    const res = await get(`/v1/ip/${raw}`);
    expect(res.status).toBe(status);
    expect((await bodyOf(res)).code).toBe("bad_request");
  });

  test("IPv6 is answered in RFC 5952 form; IPv4-mapped becomes IPv4", async () => {
    expect((await bodyOf(await get("/v1/ip/2001:0DB8:0:0:0:0:0:1"))).ip).toBe("2001:db8::1");
    expect((await bodyOf(await get("/v1/ip/::ffff:8.8.4.4"))).ip).toBe("8.8.4.4");
  });

  test("needs a credential", async () => {
    const res = await h.call("GET", "/v1/ip/8.8.8.8");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });
});

describe("GET /v1/ip/{ip}/reputation (5.2)", () => {
  test("the envelope, and cached false → true → false after a new report", async () => {
    const first = await bodyOf(await get("/v1/ip/198.51.100.20/reputation"));
    expect(first).toEqual({
      success: true,
      data: { ipAddress: "198.51.100.20", reputationScore: 100, riskLevel: "LOW", totalReports: 0, verifiedReports: 0, categories: [], country: null, isp: null, cached: false },
    });
    expect((await bodyOf(await get("/v1/ip/198.51.100.20/reputation"))).data.cached).toBe(true);
    expect((await report(reporter, { ip: "198.51.100.20", category: "PORT_SCAN", severity: "high" })).status).toBe(201);
    const after = await bodyOf(await get("/v1/ip/198.51.100.20/reputation"));
    expect(after.data).toMatchObject({ reputationScore: 59, riskLevel: "MEDIUM", totalReports: 1, categories: ["PORT_SCAN"], cached: false });
    expect((await bodyOf(await get("/v1/ip/198.51.100.20/reputation"))).data.cached).toBe(true);
  });

  test("country is the alpha-2 code", async () => {
    expect((await bodyOf(await get("/v1/ip/8.8.8.8/reputation"))).data).toMatchObject({ country: "US", isp: "Google LLC" });
  });
});

describe("POST /v1/ip/bulk (5.9)", () => {
  const bulk = (json: unknown) => h.call("POST", "/v1/ip/bulk", { headers: reporter.apiKey, json });

  test("results in request order with duplicates kept; invalid entries listed, not failing", async () => {
    const res = await bulk({ ips: ["203.0.113.7", "8.8.8.8", "bogus", "203.0.113.7", "1.2.3"] });
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body.data.results.map((r: { ipAddress: string }) => r.ipAddress)).toEqual(["203.0.113.7", "8.8.8.8", "203.0.113.7"]);
    expect(body.data.results[0]).toMatchObject({ reputationScore: 51, totalReports: 1 });
    expect(body.data.invalid.map((i: { input: unknown }) => i.input)).toEqual(["bogus", "1.2.3"]);
    expect(typeof body.data.invalid[0].error).toBe("string");
  });

  test.each([[{ ips: [] }], [{ ips: Array.from({ length: 101 }, () => "8.8.8.8") }], [{}], [{ ips: "8.8.8.8" }]])("%j is 400", async (json) => {
    const res = await bulk(json);
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).code).toBe("validation_failed");
  });

  // 5.9: 1..100 strings. A non-string is a bad request, not an invalid address (issue 18).
  test.each([
    [{ ips: ["10.8.0.1", 42] }, "ips[1]"],
    [{ ips: [null] }, "ips[0]"],
    [{ ips: ["10.8.0.1", "10.8.0.2", ["10.8.0.3"]] }, "ips[2]"],
    [{ ips: [{ ip: "10.8.0.1" }] }, "ips[0]"],
    [{ ips: [true] }, "ips[0]"],
  ])("%j is 400 naming %s", async (json, field) => {
    const res = await bulk(json);
    expect(res.status).toBe(400);
    const body = await bodyOf(res);
    expect(body).toMatchObject({ success: false, code: "validation_failed" });
    expect(body.details).toEqual([{ field, message: "must be a string" }]);
  });

  test("exactly 100 is accepted", async () => {
    const res = await bulk({ ips: Array.from({ length: 100 }, (_, i) => `192.0.2.${i}`) });
    expect((await bodyOf(res)).data.results).toHaveLength(100);
  });

});

// In a harness of their own: the reports here would change what the recent list below shows.
describe("POST /v1/ip/bulk: the body reader, the cached flag and retention (5.7, 5.9)", () => {
  let own: Harness;
  let user: TestUser;
  let user2: TestUser;
  beforeAll(async () => {
    own = await createHarness();
    user = await addUser(own, { tier: "enterprise" });
    user2 = await addUser(own, { tier: "enterprise" });
  });
  afterAll(() => own.close());
  // A token minted now: the clock moves by months here, past the tokens' one hour.
  const reportBy = async (who: TestUser, ipAddress: string) => {
    const { accessToken } = await own.services.credentials.issueToken(who.user);
    const headers = { authorization: `Bearer ${accessToken}` };
    const res = await own.call("POST", "/v1/ip/report", { headers, json: { ipAddress, category: "SSH", description: "", severity: 5 } });
    expect(res.status).toBe(201);
  };
  const send = (body: string) => own.call("POST", "/v1/ip/bulk", { headers: { ...user.apiKey, "content-type": "application/json" }, body });
  const resultsOf = async (ips: string[]) => (await bodyOf(await send(JSON.stringify({ ips })))).data.results as { totalReports: number; cached: boolean }[];

  // The plain body is read by the byte scanner, the others by JSON.parse: the answers must not differ.
  test("a plain body and bodies only JSON.parse reads give the same answers", async () => {
    await reportBy(user, "198.51.100.61");
    await reportBy(user, "2001:db8::61");
    const ips = ["198.51.100.61", "2001:DB8::61", "2001:db8::61", "::ffff:198.51.100.61", "8.8.4.4", "2001:4860:4860::8844", "010.1.1.1", ""];
    const plain = await bodyOf(await send(JSON.stringify({ ips })));
    const escaped = await bodyOf(await send(JSON.stringify({ ips }).replaceAll(".", "\\u002e")));
    const extraKey = await bodyOf(await send(JSON.stringify({ note: "x", ips })));
    const withoutCached = (b: { data: { results: Record<string, unknown>[] } }) => ({ ...b.data, results: b.data.results.map(({ cached: _, ...rest }) => rest) });
    expect(withoutCached(escaped)).toEqual(withoutCached(plain));
    expect(withoutCached(extraKey)).toEqual(withoutCached(plain));
    expect(plain.data.results.map((r: { ipAddress: string; totalReports: number }) => [r.ipAddress, r.totalReports])).toEqual([
      ["198.51.100.61", 1],
      ["2001:db8::61", 1],
      ["2001:db8::61", 1],
      ["198.51.100.61", 1],
      ["8.8.4.4", 0],
      ["2001:4860:4860::8844", 0],
    ]);
    expect(plain.data.invalid.map((i: { input: string }) => i.input)).toEqual(["010.1.1.1", ""]);
    expect(plain.data.results[4]).toMatchObject({ reputationScore: 100, country: "US", isp: "Google LLC" });
  });

  test("cached: false, then true; false again after the address changed, as in a single lookup", async () => {
    const cachedOf = async (ips: string[]) => (await resultsOf(ips)).map((r) => r.cached);
    const ips = ["198.51.100.62", "2001:db8::62", "9.9.9.62", "2001:db8:ffff::62"];
    await reportBy(user, ips[0]);
    await reportBy(user, ips[1]);
    expect(await cachedOf(ips)).toEqual([false, false, false, false]);
    expect(await cachedOf(ips)).toEqual([true, true, true, true]);
    // The same address twice in one request: the second answer is the cached one.
    expect(await cachedOf(["198.51.100.63", "198.51.100.63"])).toEqual([false, true]);
    // Reported again, and reported for the first time: both answers change.
    await reportBy(user2, ips[0]);
    await reportBy(user2, ips[2]);
    expect(await cachedOf(ips)).toEqual([false, true, false, true]);
    const single = await own.call("GET", `/v1/ip/${ips[2]}/reputation`, { headers: user.apiKey });
    expect((await bodyOf(single)).data.cached).toBe(true);
  });

  test("an address whose reports passed retention answers as unknown, before the expire job has run", async () => {
    const ips = ["198.51.100.70", "198.51.100.71"];
    await reportBy(user, ips[0]);
    own.clock.advance(300 * 86_400_000);
    await reportBy(user, ips[1]);
    const view = async () => (await resultsOf(ips)).map((r) => [r.totalReports, r.cached]);
    expect(await view()).toEqual([[1, false], [1, false]]);
    expect(await view()).toEqual([[1, true], [1, true]]);
    // 366 days after the first report, 66 after the second: only the first has passed the 365-day retention.
    own.clock.advance(66 * 86_400_000);
    expect(await view()).toEqual([[0, false], [1, true]]);
    expect(await view()).toEqual([[0, true], [1, true]]);
  });
});

describe("GET /v1/ip/recent (5.8)", () => {
  test("one row per address, newest report first, with pagination", async () => {
    h.clock.advance(60_000);
    await report(reporter, { ipAddress: "192.0.2.50", category: "SPAM", description: "x", severity: 2 });
    h.clock.advance(60_000);
    await report(reporter2, { ipAddress: "192.0.2.50", category: "PHISHING", description: "x", severity: 2 });
    const body = await bodyOf(await get("/v1/ip/recent?limit=2"));
    expect(body.pagination).toEqual({ limit: 2, offset: 0, total: 3, next: expect.any(String) });
    expect(body.data).toHaveLength(2);
    expect(body.data[0]).toMatchObject({
      ipAddress: "192.0.2.50",
      category: "PHISHING",
      categories: ["SPAM", "PHISHING"],
      totalReports: 2,
      lastReportedAt: "2026-11-21T08:02:00.000Z",
      country: null,
    });
    const second = await bodyOf(await get("/v1/ip/recent?limit=2&offset=2"));
    expect(second.data.map((r: { ipAddress: string }) => r.ipAddress)).toEqual(["203.0.113.7"]);
  });

  test("the default limit is 10", async () => {
    expect((await bodyOf(await get("/v1/ip/recent"))).pagination).toEqual({ limit: 10, offset: 0, total: 3, next: null });
  });

  test.each(["limit=0", "limit=101", "limit=abc", "offset=-1", "limit=1.5"])("%s is 400", async (q) => {
    const res = await get(`/v1/ip/recent?${q}`);
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).code).toBe("validation_failed");
  });
});

describe("GET /v1/categories and /v1/scoring", () => {
  test("16 categories with descriptions and AbuseIPDB numbers", async () => {
    const body = await bodyOf(await get("/v1/categories"));
    expect(body.data).toHaveLength(16);
    expect(body.data.find((c: { name: string }) => c.name === "BRUTE_FORCE")).toMatchObject({ abuseIpdbCategory: 18, abuseIpdbCategories: [5, 18] });
    expect(body.data.find((c: { name: string }) => c.name === "SPAM")).toMatchObject({ abuseIpdbCategory: 11, abuseIpdbCategories: [10, 11, 12] });
    expect(body.data.find((c: { name: string }) => c.name === "MALWARE")).toMatchObject({ abuseIpdbCategory: null, abuseIpdbCategories: [] });
    // The table both ways: each of AbuseIPDB's 23 numbers maps to exactly one category.
    const numbers = body.data.flatMap((c: { abuseIpdbCategories: number[] }) => c.abuseIpdbCategories).sort((a: number, b: number) => a - b);
    expect(numbers).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
  });

  test("the scoring parameters in force", async () => {
    const body = await bodyOf(await get("/v1/scoring"));
    expect(body.data).toMatchObject({ halfLifeDays: 30, perReporterCap: 1.5, scale: 1.5, retentionDays: 365 });
  });
});

describe("allowlist (section 6)", () => {
  test("admin adds a network; its addresses show isAllowlisted and keep their score", async () => {
    const added = await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: "203.0.113.0/24", note: "lab" } });
    expect(added.status).toBe(201);
    expect((await bodyOf(added)).data).toMatchObject({ cidr: "203.0.113.0/24", note: "lab" });
    const detail = await bodyOf(await get("/v1/ip/203.0.113.7"));
    expect(detail).toMatchObject({ isAllowlisted: true, reputationScore: 51 });
    const list = await bodyOf(await h.call("GET", "/v1/admin/allowlist", { headers: admin.jwt }));
    expect(list.data.map((e: { cidr: string }) => e.cidr)).toEqual(["203.0.113.0/24"]);
    const removed = await h.call("DELETE", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: "203.0.113.0/24" } });
    expect(removed.status).toBe(200);
    expect((await bodyOf(await get("/v1/ip/203.0.113.7"))).isAllowlisted).toBe(false);
  });

  test("an undecodable id in the path is 400, not a 500 (found by the property tests)", async () => {
    const res = await h.call("DELETE", "/v1/admin/allowlist/%E0%A4%A", { headers: admin.jwt });
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).code).toBe("bad_request");
  });

  test("bad CIDRs are 400; non-admins are refused", async () => {
    expect((await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: "203.0.113.1/24" } })).status).toBe(400);
    expect((await h.call("POST", "/v1/admin/allowlist", { headers: reporter.jwt, json: { cidr: "203.0.113.0/24" } })).status).toBe(403);
    expect((await h.call("GET", "/v1/admin/allowlist", { headers: admin.apiKey })).status).toBe(401);
  });
});

describe("retention (5.5)", () => {
  test("a report past retention stops counting at once, before the expire job runs", async () => {
    h.clock.advance(366 * 86_400_000);
    const body = await bodyOf(await get("/v1/ip/203.0.113.7"));
    expect(body).toMatchObject({ reports: 0, reputationScore: 100, threatLevel: "low", firstSeen: null });
    expect((await bodyOf(await get("/v1/ip/recent"))).pagination.total).toBe(0);
  });
});

describe("paths that cannot be decoded", () => {
  test.each(["/v1/ip/%", "/v1/ip/%E0%A4%A", "/v1/ip/%/reputation"])("%s is 400, not a 500", async (path) => {
    const res = await get(path);
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).code).toBe("bad_request");
  });
});

describe("cached after a change and back", () => {
  test("reported and rejected with no lookup in between: the next answer is computed again", async () => {
    const ip = "198.51.100.77";
    expect((await bodyOf(await get(`/v1/ip/${ip}/reputation`))).data.cached).toBe(false);
    expect((await bodyOf(await get(`/v1/ip/${ip}/reputation`))).data.cached).toBe(true);
    // The retention test above moved the clock a year on: tokens valid now.
    const fresh = async (who: TestUser) => ({ authorization: `Bearer ${(await h.services.credentials.issueToken(who.user)).accessToken}` });
    const created = await bodyOf(await h.call("POST", "/v1/ip/report", { headers: await fresh(reporter), json: { ip, category: "SPAM" } }));
    const rejected = await h.call("PATCH", `/v1/admin/reports/${created.reportId}`, { headers: await fresh(admin), json: { status: "rejected" } });
    expect(rejected.status).toBe(200);
    const after = await bodyOf(await get(`/v1/ip/${ip}/reputation`));
    expect(after.data).toMatchObject({ reputationScore: 100, totalReports: 0, cached: false });
  });
});
