// POST /v1/ip/report (contract 5.4) through HTTP: both payload shapes give one answer, every validation rule, the
// 15-minute duplicate rule with Retry-After, durability before the 201, group commit under concurrency; and the
// admin's GET/PATCH /v1/admin/reports/{id} (5.5).

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { databasePath } from "../../src/store/database";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let alice: TestUser;
let bob: TestUser;
let admin: TestUser;
let next = 0;

beforeAll(async () => {
  h = await createHarness();
  alice = await addUser(h, { tier: "enterprise" });
  bob = await addUser(h, { tier: "enterprise" });
  admin = await addUser(h, { role: "admin", tier: "enterprise" });
});
afterAll(() => h.close());
beforeEach(() => h.clock.set("2026-11-21T08:00:00.000Z"));

/** A fresh token (some tests move the clock past a token's lifetime). */
async function jwt(user: TestUser) {
  const { accessToken } = await h.services.credentials.issueToken(user.user);
  return { authorization: `Bearer ${accessToken}` };
}
const report = async (user: TestUser, json: unknown) => h.call("POST", "/v1/ip/report", { headers: await jwt(user), json });
/** An address no other test uses. */
const freshIp = () => `198.18.${Math.floor(++next / 250)}.${(next % 250) + 1}`;
const count = (sql: string, ...params: (string | number)[]) => (h.store.sqlite.query(sql).get(...params) as { n: number }).n;

describe("POST /v1/ip/report", () => {
  test("shape A and shape B get the same answer, in the contract's shape", async () => {
    const ipA = freshIp();
    const ipB = freshIp();
    const a = await report(alice, { ipAddress: ipA, category: "brute_force", description: "ssh guessing", severity: 4 });
    const b = await report(alice, { ip: ipB, category: "BRUTE-FORCE", severity: "high", description: "ssh guessing", evidence: "auth.log" });
    expect([a.status, b.status]).toEqual([201, 201]);
    const [bodyA, bodyB] = [await bodyOf(a), await bodyOf(b)];
    const expected = (ip: string, body: { reportId: string }, creditBalance: number) => ({
      success: true,
      reportId: body.reportId,
      message: "Report accepted",
      data: { reportId: body.reportId, ipAddress: ip, category: "BRUTE_FORCE", severity: 4, status: "pending", createdAt: "2026-11-21T08:00:00.000Z", creditsEarned: 1, creditBalance },
    });
    expect(bodyA).toEqual(expected(ipA, bodyA, bodyA.data.creditBalance));
    expect(bodyB).toEqual(expected(ipB, bodyB, bodyA.data.creditBalance + 1));
    expect(bodyA.reportId).toMatch(/^[1-9]\d*$/);
    expect(Number(bodyB.reportId)).toBe(Number(bodyA.reportId) + 1);
    expect(Object.keys(bodyA)).toEqual(Object.keys(bodyB));
    expect(Object.keys(bodyA.data)).toEqual(Object.keys(bodyB.data));
    expect(h.store.sqlite.query("SELECT description, evidence, severity FROM reports WHERE id = ?").get(Number(bodyB.reportId))).toEqual({
      description: "ssh guessing",
      evidence: "auth.log",
      severity: 4,
    });
  });

  test("shape B's defaults: severity 3, description empty; the address comes back normalized", async () => {
    const res = await report(alice, { ip: "2001:DB8:0:0:0:0:0:AB", category: "port scan", unknownField: 1 });
    expect(res.status).toBe(201);
    const body = await bodyOf(res);
    expect(body.data).toMatchObject({ ipAddress: "2001:db8::ab", category: "PORT_SCAN", severity: 3 });
    expect(h.store.sqlite.query("SELECT description, evidence FROM reports WHERE id = ?").get(Number(body.reportId))).toEqual({ description: "", evidence: null });
  });

  test("an IPv4-mapped IPv6 address is reported as the IPv4 address; private space is reportable", async () => {
    expect((await bodyOf(await report(alice, { ip: "::ffff:203.0.113.99", category: "spam" }))).data.ipAddress).toBe("203.0.113.99");
    expect((await report(alice, { ip: "10.20.30.40", category: "spam" })).status).toBe(201);
  });

  const invalid: { name: string; body: unknown; fields: string[] }[] = [
    { name: "neither ipAddress nor ip", body: { category: "SSH", severity: 3 }, fields: ["ipAddress"] },
    { name: "both ipAddress and ip", body: { ipAddress: "203.0.113.1", ip: "203.0.113.1", category: "SSH", severity: 3, description: "" }, fields: ["ip"] },
    { name: "shape A without description", body: { ipAddress: "203.0.113.1", category: "SSH", severity: 3 }, fields: ["description"] },
    { name: "shape A without severity", body: { ipAddress: "203.0.113.1", category: "SSH", description: "" }, fields: ["severity"] },
    { name: "shape A with a severity word", body: { ipAddress: "203.0.113.1", category: "SSH", description: "", severity: "high" }, fields: ["severity"] },
    { name: "shape A without category", body: { ipAddress: "203.0.113.1", description: "", severity: 3 }, fields: ["category"] },
    { name: "severity 0", body: { ip: "203.0.113.1", category: "SSH", severity: 0 }, fields: ["severity"] },
    { name: "severity 6", body: { ip: "203.0.113.1", category: "SSH", severity: 6 }, fields: ["severity"] },
    { name: "severity 2.5", body: { ip: "203.0.113.1", category: "SSH", severity: 2.5 }, fields: ["severity"] },
    { name: "severity word unknown", body: { ip: "203.0.113.1", category: "SSH", severity: "severe" }, fields: ["severity"] },
    { name: "unknown category", body: { ip: "203.0.113.1", category: "TELEMARKETING" }, fields: ["category"] },
    { name: "description over 1,024 characters", body: { ip: "203.0.113.1", category: "SSH", description: "x".repeat(1025) }, fields: ["description"] },
    { name: "evidence over 16,384 characters", body: { ip: "203.0.113.1", category: "SSH", evidence: "x".repeat(16385) }, fields: ["evidence"] },
    { name: "description not a string", body: { ip: "203.0.113.1", category: "SSH", description: 5 }, fields: ["description"] },
    { name: "ip not a string", body: { ip: 3405803777, category: "SSH" }, fields: ["ip"] },
    { name: "leading zeros", body: { ip: "010.0.0.1", category: "SSH" }, fields: ["ip"] },
    { name: "CIDR", body: { ip: "203.0.113.0/24", category: "SSH" }, fields: ["ip"] },
    { name: "zone id", body: { ip: "fe80::1%eth0", category: "SSH" }, fields: ["ip"] },
    { name: "whitespace", body: { ip: " 203.0.113.1", category: "SSH" }, fields: ["ip"] },
    { name: "loopback", body: { ip: "127.0.0.1", category: "SSH" }, fields: ["ip"] },
    { name: "unspecified", body: { ip: "::", category: "SSH" }, fields: ["ip"] },
    { name: "multicast", body: { ip: "224.0.0.1", category: "SSH" }, fields: ["ip"] },
    { name: "broadcast", body: { ip: "255.255.255.255", category: "SSH" }, fields: ["ip"] },
    { name: "reserved 240/4", body: { ip: "240.0.0.1", category: "SSH" }, fields: ["ip"] },
    { name: "several problems at once", body: { ip: "nope", category: "nope", severity: 9 }, fields: ["ip", "category", "severity"] },
  ];
  for (const { name, body, fields } of invalid) {
    test(`400 validation_failed: ${name}; nothing stored`, async () => {
      const before = count("SELECT count(*) AS n FROM reports");
      const res = await report(alice, body);
      expect(res.status).toBe(400);
      const answer = await bodyOf(res);
      expect(answer.success).toBe(false);
      expect(answer.code).toBe("validation_failed");
      expect(answer.details.map((d: { field: string }) => d.field)).toEqual(fields);
      expect(count("SELECT count(*) AS n FROM reports")).toBe(before);
    });
  }

  test("a body that is not a JSON object is 400 bad_request; malformed JSON 400; another media type 415", async () => {
    for (const json of [[1, 2], "203.0.113.1", null]) {
      const res = await report(alice, json);
      expect(res.status).toBe(400);
      expect((await bodyOf(res)).code).toBe("bad_request");
    }
    const malformed = await h.call("POST", "/v1/ip/report", { headers: { ...(await jwt(alice)), "content-type": "application/json" }, body: "{" });
    expect([malformed.status, (await bodyOf(malformed)).code]).toEqual([400, "bad_request"]);
    const form = await h.call("POST", "/v1/ip/report", { headers: { ...(await jwt(alice)), "content-type": "text/plain" }, body: "ip=203.0.113.1" });
    expect([form.status, (await bodyOf(form)).code]).toEqual([415, "unsupported_media_type"]);
  });

  test("needs a user access token: none is 401, an API key is 401 pointing to /v1/auth/login", async () => {
    const none = await h.call("POST", "/v1/ip/report", { json: { ip: freshIp(), category: "SSH" } });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    for (const headers of [alice.apiKey, alice.bearerKey]) {
      const res = await h.call("POST", "/v1/ip/report", { headers, json: { ip: freshIp(), category: "SSH" } });
      expect(res.status).toBe(401);
      const body = await bodyOf(res);
      expect(body.code).toBe("unauthorized");
      expect(body.error).toContain("POST /v1/auth/login");
    }
  });

  test("the same reporter and address within 15 minutes: 429 duplicate_report with Retry-After; accepted after 15 minutes", async () => {
    const ip = freshIp();
    expect((await report(alice, { ip, category: "SSH" })).status).toBe(201);
    const balance = (await bodyOf(await h.call("GET", "/v1/credits/balance", { headers: await jwt(alice) }))).data.balance;
    const before = count("SELECT count(*) AS n FROM reports WHERE ip = ?", ip);

    h.clock.advance(4 * 60_000 + 30_500); // 4 min 30.5 s later: 629.5 s left, rounded up
    const dup = await report(alice, { ip, category: "DDOS" });
    expect(dup.status).toBe(429);
    expect(dup.headers.get("retry-after")).toBe("630");
    const body = await bodyOf(dup);
    expect(body).toEqual({ success: false, error: expect.stringContaining(ip), code: "duplicate_report" });
    expect(count("SELECT count(*) AS n FROM reports WHERE ip = ?", ip)).toBe(before);
    expect((await bodyOf(await h.call("GET", "/v1/credits/balance", { headers: await jwt(alice) }))).data.balance).toBe(balance);

    // Another reporter may report it meanwhile.
    expect((await report(bob, { ip, category: "SSH" })).status).toBe(201);

    h.clock.set(Date.parse("2026-11-21T08:15:00.000Z"));
    const later = await report(alice, { ip, category: "DDOS" });
    expect(later.status).toBe(201);
    expect((await bodyOf(later)).data.creditBalance).toBe(balance + 1);
  });

  test("the report is in the database file when the 201 arrives (read with a separate connection)", async () => {
    const ip = freshIp();
    const res = await report(alice, { ipAddress: ip, category: "MALWARE", description: "c2", severity: 5 });
    expect(res.status).toBe(201);
    const id = Number((await bodyOf(res)).reportId);
    const other = new Database(databasePath(h.dataDir), { readonly: true });
    try {
      expect(other.query("SELECT ip, category, severity, status FROM reports WHERE id = ?").get(id)).toEqual({ ip, category: "MALWARE", severity: 5, status: "pending" });
      expect(other.query("SELECT count(*) AS n FROM outbox WHERE event = 'ip.reported' AND json_extract(data, '$.reportId') = ?").get(String(id))).toEqual({ n: 1 });
      expect(other.query("SELECT reputation_score FROM addresses WHERE ip = ?").get(ip)).toEqual({ reputation_score: 51 });
    } finally {
      other.close();
    }
  });

  test("the next lookup reflects the report: the record, the index and the response cache", async () => {
    const ip = freshIp();
    const lookup = async (path: string) => bodyOf(await h.call("GET", path, { headers: alice.apiKey }));
    expect((await lookup(`/v1/ip/${ip}/reputation`)).data).toMatchObject({ reputationScore: 100, totalReports: 0, cached: false });
    expect((await lookup(`/v1/ip/${ip}/reputation`)).data.cached).toBe(true);

    expect((await report(alice, { ip, category: "SSH" })).status).toBe(201);
    expect((await lookup(`/v1/ip/${ip}/reputation`)).data).toMatchObject({ reputationScore: 67, totalReports: 1, categories: ["SSH"], cached: false });
    expect((await lookup(`/v1/ip/${ip}/reputation`)).data.cached).toBe(true);
    expect(await lookup(`/v1/ip/${ip}`)).toMatchObject({ reports: 1, abuse_confidence: 33, reputationScore: 67, threatLevel: "medium", lastSeen: "2026-11-21T08:00:00.000Z" });

    // Σw = 0.6 + 1.0 = 1.6: 34
    expect((await report(bob, { ip, category: "DDOS", severity: "critical" })).status).toBe(201);
    expect((await lookup(`/v1/ip/${ip}/reputation`)).data).toMatchObject({ reputationScore: 34, totalReports: 2, categories: ["DDOS", "SSH"], cached: false });
  });

  test("100 reports at once from distinct addresses: all committed, in far fewer transactions than reports", async () => {
    const headers = await jwt(alice);
    const ips = Array.from({ length: 100 }, freshIp);
    const before = { ...h.services.reports.stats };
    const responses = await Promise.all(ips.map((ip) => h.call("POST", "/v1/ip/report", { headers, json: { ip, category: "SSH" } })));
    expect(responses.map((r) => r.status)).toEqual(ips.map(() => 201));
    const ids = await Promise.all(responses.map(async (r) => (await bodyOf(r)).reportId));
    expect(new Set(ids).size).toBe(100);
    const placeholders = ips.map(() => "?").join(",");
    expect(count(`SELECT count(*) AS n FROM reports WHERE ip IN (${placeholders})`, ...ips)).toBe(100);
    const stats = h.services.reports.stats;
    expect(stats.reports - before.reports).toBe(100);
    expect(stats.batches - before.batches).toBeLessThanOrEqual(10);
  });

  test("two identical reports at once: one 201, one 429", async () => {
    const ip = freshIp();
    const headers = await jwt(bob);
    const [first, second] = await Promise.all([0, 1].map(() => h.call("POST", "/v1/ip/report", { headers, json: { ip, category: "SSH" } })));
    expect([first.status, second.status].sort()).toEqual([201, 429]);
    expect(count("SELECT count(*) AS n FROM reports WHERE ip = ?", ip)).toBe(1);
  });
});

describe("GET and PATCH /v1/admin/reports/{id}", () => {
  const adminCall = async (method: string, id: string, json?: unknown, user = admin) => h.call(method, `/v1/admin/reports/${id}`, { headers: await jwt(user), json });

  test("an admin sees a report with its transitions, verifies it, then rejects it", async () => {
    const ip = freshIp();
    const id = (await bodyOf(await report(bob, { ipAddress: ip, category: "PHISHING", description: "fake bank", severity: 2 }))).reportId;
    const shown = await adminCall("GET", id);
    expect(shown.status).toBe(200);
    expect(await bodyOf(shown)).toEqual({
      success: true,
      data: {
        id,
        ipAddress: ip,
        reporterId: String(bob.user.id),
        category: "PHISHING",
        severity: 2,
        description: "fake bank",
        evidence: null,
        status: "pending",
        source: "api",
        createdAt: "2026-11-21T08:00:00.000Z",
        statusChangedAt: "2026-11-21T08:00:00.000Z",
        transitions: [{ from: null, to: "pending", at: "2026-11-21T08:00:00.000Z", actorUserId: String(bob.user.id), reason: "api" }],
      },
    });
    const balance = async () => (await bodyOf(await h.call("GET", "/v1/credits/balance", { headers: await jwt(bob) }))).data.balance;
    const start = await balance();

    h.clock.advance(60_000);
    const verified = await bodyOf(await adminCall("PATCH", id, { status: "verified" }));
    expect(verified.data.status).toBe("verified");
    expect(verified.data.transitions.at(-1)).toEqual({ from: "pending", to: "verified", at: "2026-11-21T08:01:00.000Z", actorUserId: String(admin.user.id), reason: "admin" });
    expect(await balance()).toBe(start + 2);
    expect(count("SELECT count(*) AS n FROM outbox WHERE event = 'ip.verified' AND json_extract(data, '$.reportId') = ?", id)).toBe(1);

    h.clock.advance(60_000);
    const rejected = await bodyOf(await adminCall("PATCH", id, { status: "rejected" }));
    expect(rejected.data.status).toBe("rejected");
    expect(rejected.data.transitions.map((t: { to: string }) => t.to)).toEqual(["pending", "verified", "rejected"]);
    expect(await balance()).toBe(start - 1);
    expect(count("SELECT count(*) AS n FROM addresses WHERE ip = ?", ip)).toBe(0);
  });

  test("status must be verified or rejected (400); a rejected report cannot be verified (409)", async () => {
    const id = (await bodyOf(await report(bob, { ip: freshIp(), category: "SSH" }))).reportId;
    for (const json of [{ status: "expired" }, { status: "pending" }, {}, { status: "VERIFIED" }]) {
      const res = await adminCall("PATCH", id, json);
      expect(res.status).toBe(400);
      expect(await bodyOf(res)).toMatchObject({ code: "validation_failed", details: [{ field: "status" }] });
    }
    expect((await adminCall("PATCH", id, { status: "rejected" })).status).toBe(200);
    const conflict = await adminCall("PATCH", id, { status: "verified" });
    expect(conflict.status).toBe(409);
    expect((await bodyOf(conflict)).code).toBe("conflict");
  });

  test("unknown and malformed ids are 404", async () => {
    for (const id of ["999999", "0", "abc", "1.5", "-1", "99999999999999999999"]) {
      const res = await adminCall("GET", id);
      expect(res.status).toBe(404);
      expect((await bodyOf(res)).code).toBe("not_found");
      expect((await adminCall("PATCH", id, { status: "verified" })).status).toBe(404);
    }
  });

  test("a user who is not an admin gets 403", async () => {
    const id = (await bodyOf(await report(alice, { ip: freshIp(), category: "SSH" }))).reportId;
    expect((await adminCall("GET", id, undefined, alice)).status).toBe(403);
    const res = await adminCall("PATCH", id, { status: "verified" }, alice);
    expect([res.status, (await bodyOf(res)).code]).toEqual([403, "forbidden"]);
    expect(count("SELECT count(*) AS n FROM reports WHERE id = ? AND status = 'pending'", Number(id))).toBe(1);
  });
});
