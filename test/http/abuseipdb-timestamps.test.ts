// AbuseIPDB report times (contract 13 and 18) and the duplicate rule's window (`--duplicate-window`): a report's
// `timestamp` (a bulk row's `ReportDate`) in the past and within retention is the report's time (its score decays
// from it, `maxAgeInDays` filters on it, `reportedAt` shows it); more than 5 minutes ahead or older than retention
// is a 422 naming the parameter (a bulk row: an invalidReports entry) and stores nothing; `/v1` reports stay dated
// on arrival. The window is the server's option: 0 turns the rule off.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

const NOW = "2026-11-21T08:00:00.000Z";
const DAY = 86_400_000;

describe("AbuseIPDB timestamps", () => {
  let h: Harness;
  let reporter: TestUser;
  beforeAll(async () => {
    h = await createHarness({ retentionDays: 90 });
    reporter = await addUser(h, { tier: "enterprise" });
  });
  afterAll(() => h.close());
  beforeEach(() => h.clock.set(NOW));

  const report = (fields: Record<string, string>) => fetch(`${h.url}/api/v2/report`, { method: "POST", headers: { Key: reporter.key }, body: new URLSearchParams(fields) });
  const createdAt = (ip: string) => h.store.sqlite.query<{ t: number }, [string]>("SELECT created_at AS t FROM reports WHERE ip = ?").all(ip).map((r) => r.t);
  const reportCount = () => h.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM reports").get()!.n;

  test("a past timestamp within retention is the report's time: reportedAt shows it, maxAgeInDays filters on it, the score decays from it", async () => {
    const tenDaysAgo = Date.parse(NOW) - 10 * DAY;
    expect((await report({ ip: "198.51.100.40", categories: "18", timestamp: new Date(tenDaysAgo).toISOString() })).status).toBe(200);
    expect((await report({ ip: "198.51.100.41", categories: "18" })).status).toBe(200);
    expect(createdAt("198.51.100.40")).toEqual([tenDaysAgo]);
    expect(createdAt("198.51.100.41")).toEqual([Date.parse(NOW)]);
    const reports = await bodyOf(await fetch(`${h.url}/api/v2/reports?ipAddress=198.51.100.40&maxAgeInDays=30`, { headers: { Key: reporter.key } }));
    expect(reports.data.results[0].reportedAt).toBe("2026-11-11T08:00:00+00:00");
    const recent = await bodyOf(await fetch(`${h.url}/api/v2/check?ipAddress=198.51.100.40&maxAgeInDays=5`, { headers: { Key: reporter.key } }));
    expect(recent.data.totalReports).toBe(0);
    const month = await bodyOf(await fetch(`${h.url}/api/v2/check?ipAddress=198.51.100.40&maxAgeInDays=30`, { headers: { Key: reporter.key } }));
    expect(month.data.totalReports).toBe(1);
    // Decayed: ten days old counts less than a report made now, all else equal.
    const old = await bodyOf(await h.call("GET", "/v1/ip/198.51.100.40/reputation", { headers: reporter.apiKey }));
    const fresh = await bodyOf(await h.call("GET", "/v1/ip/198.51.100.41/reputation", { headers: reporter.apiKey }));
    expect(old.data.reputationScore).toBeGreaterThan(fresh.data.reputationScore);
  });

  test("up to 5 minutes ahead is taken as now; further ahead, or older than retention, is a 422 naming timestamp and stores nothing", async () => {
    const now = Date.parse(NOW);
    expect((await report({ ip: "198.51.100.42", categories: "18", timestamp: new Date(now + 4 * 60_000).toISOString() })).status).toBe(200);
    expect(createdAt("198.51.100.42")).toEqual([now]);
    const before = reportCount();
    for (const at of [now + 6 * 60_000, now - 91 * DAY]) {
      const res = await report({ ip: "198.51.100.43", categories: "18", timestamp: new Date(at).toISOString() });
      expect(res.status).toBe(422);
      expect((await bodyOf(res)).errors[0].source.parameter).toBe("timestamp");
    }
    expect(reportCount()).toBe(before);
  });

  test("bulk-report: a ReportDate is the row's time; one ahead or past retention is an invalidReports entry", async () => {
    const now = Date.parse(NOW);
    const csv = [
      "IP,Categories,ReportDate,Comment",
      `198.51.100.50,18,${new Date(now - 3 * DAY).toISOString()},old`,
      `198.51.100.51,18,${new Date(now + DAY).toISOString()},ahead`,
      `198.51.100.52,18,${new Date(now - 200 * DAY).toISOString()},expired`,
      "198.51.100.53,18,,none",
    ].join("\n");
    const res = await fetch(`${h.url}/api/v2/bulk-report`, { method: "POST", headers: { Key: reporter.key }, body: new URLSearchParams({ csv }) });
    expect(res.status).toBe(200);
    const { data } = await bodyOf(res);
    expect(data.savedReports).toBe(2);
    expect(data.invalidReports).toEqual([
      { error: "Invalid Report Date", input: "198.51.100.51", rowNumber: 3 },
      { error: "Invalid Report Date", input: "198.51.100.52", rowNumber: 4 },
    ]);
    expect(createdAt("198.51.100.50")).toEqual([now - 3 * DAY]);
    expect(createdAt("198.51.100.53")).toEqual([now]);
    expect(createdAt("198.51.100.51")).toEqual([]);
  });

  test("a /v1 report is dated on arrival", async () => {
    const res = await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ip: "198.51.100.60", category: "ssh", timestamp: "2026-11-01T00:00:00Z" } });
    expect(res.status).toBe(201);
    expect(createdAt("198.51.100.60")).toEqual([Date.parse(NOW)]);
  });
});

describe("--duplicate-window", () => {
  const reportTwice = async (h: Harness, user: TestUser, afterMs: number) => {
    h.clock.set(NOW);
    const first = await h.call("POST", "/v1/ip/report", { headers: user.jwt, json: { ip: "198.51.100.70", category: "ssh" } });
    h.clock.advance(afterMs);
    const second = await h.call("POST", "/v1/ip/report", { headers: user.jwt, json: { ip: "198.51.100.70", category: "ssh" } });
    return [first.status, second.status, second.headers.get("retry-after")];
  };

  test("a window of 2 minutes: a second report after 1 minute is 429 with the rest of the window; after 2 it is taken", async () => {
    const h = await createHarness({ duplicateWindowMs: 120_000 });
    try {
      const user = await addUser(h, { tier: "enterprise" });
      expect(await reportTwice(h, user, 60_000)).toEqual([201, 429, "60"]);
      h.clock.advance(60_000);
      expect((await h.call("POST", "/v1/ip/report", { headers: user.jwt, json: { ip: "198.51.100.70", category: "ssh" } })).status).toBe(201);
      const v2 = await fetch(`${h.url}/api/v2/report`, { method: "POST", headers: { Key: user.key }, body: new URLSearchParams({ ip: "198.51.100.70", categories: "18" }) });
      expect(v2.status).toBe(429);
      expect((await bodyOf(v2)).errors[0].detail).toContain("once in 2 minutes");
    } finally {
      await h.close();
    }
  });

  test("0 turns the rule off", async () => {
    const h = await createHarness({ duplicateWindowMs: 0 });
    try {
      const user = await addUser(h, { tier: "enterprise" });
      expect((await reportTwice(h, user, 0)).slice(0, 2)).toEqual([201, 201]);
    } finally {
      await h.close();
    }
  });

  test("the option and its variable are read: 15m by default, 0 off, a bad value refused", async () => {
    const { resolveConfig } = await import("../../src/config");
    expect(resolveConfig(new Map(), {}).duplicateWindowMs).toBe(15 * 60_000);
    expect(resolveConfig(new Map([["--duplicate-window", ["0"]]]), {}).duplicateWindowMs).toBe(0);
    expect(resolveConfig(new Map(), { ABUSE_INTEL_DUPLICATE_WINDOW: "90s" }).duplicateWindowMs).toBe(90_000);
    expect(() => resolveConfig(new Map([["--duplicate-window", ["soon"]]]), {})).toThrow(/--duplicate-window/);
  });
});
