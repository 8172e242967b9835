// The score numbers the contract's formula (5.7) gives, observed through the HTTP API: fresh, decayed (after the
// rescore job), verified (community and admin), capped per reporter, several reporters, and the risk levels.
// Expected values: round(100 × exp(−Σw / 1.5)), w = severityWeight × 0.5^(ageDays/30) × (verified ? 2 : 1),
// each reporter's Σw on one address capped at 1.5.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

const DAY = 86_400_000;
const MINUTE = 60_000;
const expected = (sumWeight: number) => Math.round(100 * Math.exp(-sumWeight / 1.5));

let h: Harness;
let users: TestUser[];
let admin: TestUser;

beforeEach(async () => {
  h = await createHarness();
  users = await Promise.all([1, 2, 3].map(() => addUser(h, { tier: "enterprise" })));
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
});
afterEach(() => h.close());

/** A token valid at the manual clock's now: these tests move the clock by days, past the token lifetime. */
async function jwt(who: TestUser): Promise<Record<string, string>> {
  const { accessToken } = await h.services.credentials.issueToken(who.user);
  return { authorization: `Bearer ${accessToken}` };
}

async function report(who: TestUser, ip: string, severity: number, category = "SSH") {
  const res = await h.call("POST", "/v1/ip/report", { headers: await jwt(who), json: { ipAddress: ip, category, description: "t", severity } });
  expect(res.status).toBe(201);
  return (await bodyOf(res)).reportId as string;
}

async function reputation(ip: string) {
  return (await bodyOf(await h.call("GET", `/v1/ip/${ip}/reputation`, { headers: admin.apiKey }))).data;
}

async function runJob(name: string) {
  const res = await h.call("POST", `/v1/admin/jobs/${name}/run`, { headers: await jwt(admin) });
  expect(res.status).toBe(200);
  expect((await bodyOf(res)).data.lastError).toBeNull();
}

describe("fresh reports", () => {
  test.each([
    [1, 88, "LOW"],
    [2, 77, "MEDIUM"],
    [3, 67, "MEDIUM"],
    [4, 59, "MEDIUM"],
    [5, 51, "MEDIUM"],
  ])("one report of severity %d scores %d (%s)", async (severity, score, risk) => {
    await report(users[0], "198.51.100.1", severity);
    expect(score).toBe(expected([0, 0.2, 0.4, 0.6, 0.8, 1.0][severity]));
    expect(await reputation("198.51.100.1")).toMatchObject({ reputationScore: score, riskLevel: risk, totalReports: 1, verifiedReports: 0 });
  });
});

describe("decay", () => {
  test("severity 5 after 30 and 60 days, once the rescore job has run: 72 and 85", async () => {
    await report(users[0], "198.51.100.2", 5);
    expect((await reputation("198.51.100.2")).reputationScore).toBe(51);
    h.clock.advance(30 * DAY);
    await runJob("rescore");
    expect(await reputation("198.51.100.2")).toMatchObject({ reputationScore: expected(0.5), riskLevel: "MEDIUM", cached: false });
    expect(expected(0.5)).toBe(72);
    h.clock.advance(30 * DAY);
    await runJob("rescore");
    expect((await reputation("198.51.100.2")).reputationScore).toBe(85);
  });
});

describe("per-reporter cap", () => {
  test("ten severity-5 reports of one reporter count as 1.5, not 10: 37 (HIGH)", async () => {
    for (let i = 0; i < 10; i++) {
      await report(users[0], "198.51.100.3", 5);
      h.clock.advance(16 * MINUTE); // past the 15-minute duplicate rule
    }
    await runJob("rescore");
    const data = await reputation("198.51.100.3");
    expect(data.totalReports).toBe(10);
    expect(data.reputationScore).toBe(37);
    expect(data.riskLevel).toBe("HIGH");
  });

  test("three reporters add up: 3 × 1.0 = 3.0 → 14 (CRITICAL)", async () => {
    for (const u of users) await report(u, "198.51.100.4", 5, "SPAM");
    expect(await reputation("198.51.100.4")).toMatchObject({ reputationScore: expected(3), riskLevel: "CRITICAL", totalReports: 3 });
    expect(expected(3)).toBe(14);
  });
});

describe("verified weight", () => {
  test("community verification doubles each weight, still capped per reporter: 3 × min(2 × 0.6, 1.5) → 9", async () => {
    for (const u of users) await report(u, "198.51.100.5", 3, "PORT_SCAN");
    expect((await reputation("198.51.100.5")).reputationScore).toBe(expected(1.8));
    await runJob("verify");
    expect(await reputation("198.51.100.5")).toMatchObject({ reputationScore: expected(3.6), verifiedReports: 3, riskLevel: "CRITICAL" });
    expect(expected(3.6)).toBe(9);
  });

  test("an admin verifying one severity-2 report: 0.4 × 2 = 0.8 → 59; rejecting it: 100", async () => {
    const id = await report(users[0], "198.51.100.6", 2);
    expect((await reputation("198.51.100.6")).reputationScore).toBe(77);
    const verified = await h.call("PATCH", `/v1/admin/reports/${id}`, { headers: await jwt(admin), json: { status: "verified" } });
    expect(verified.status).toBe(200);
    expect(await reputation("198.51.100.6")).toMatchObject({ reputationScore: 59, verifiedReports: 1 });
    await h.call("PATCH", `/v1/admin/reports/${id}`, { headers: await jwt(admin), json: { status: "rejected" } });
    expect(await reputation("198.51.100.6")).toMatchObject({ reputationScore: 100, totalReports: 0, riskLevel: "LOW" });
  });
});
