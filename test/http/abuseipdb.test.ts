// `/api/v2`, AbuseIPDB's API v2 on the appliance (contract 13), over a real port: the exact shapes, flags,
// error bodies and headers that the clients rely on, and that a report made here is the same report as on /v1.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { ABUSEIPDB_ENDPOINTS, UNLIMITED_RATE_LIMIT } from "../../src/http/abuseipdb/router";
import { buildOpenApiDocument } from "../../src/http/openapi";
import { listen } from "../../src/http/server";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let server: Server<undefined>;
let reporter: TestUser;
let other: TestUser;
let admin: TestUser;
let unlimited: TestUser;

beforeAll(async () => {
  h = await createHarness();
  reporter = await addUser(h, { dailyLimit: 1000 });
  other = await addUser(h, { dailyLimit: 1000 });
  admin = await addUser(h, { role: "admin", dailyLimit: 1000 });
  unlimited = await addUser(h, { tier: "enterprise" });
  server = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  server.stop(true);
  await h.close();
});

const base = () => `http://127.0.0.1:${server.port}`;
const get = (path: string, key: string | null = reporter.key) => fetch(`${base()}${path}`, { headers: key === null ? {} : { Key: key } });
const post = (path: string, body: string | URLSearchParams | FormData, key: string = reporter.key, headers: Record<string, string> = {}) =>
  fetch(`${base()}${path}`, { method: "POST", body, headers: { Key: key, Accept: "application/json", ...headers } });
const form = (fields: Record<string, string>) => new URLSearchParams(fields);
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;
const v1Score = async (ip: string) =>
  ((await (await h.call("GET", `/v1/ip/${ip}/reputation`, { headers: reporter.apiKey })).json()) as { data: { reputationScore: number; totalReports: number; categories: string[] } }).data;

describe("check", () => {
  test("an address nobody reported: every field, strings never null, no verbose fields", async () => {
    const res = await get("/api/v2/check?ipAddress=8.8.8.8");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    const { data } = (await res.json()) as { data: Record<string, unknown> };
    expect(Object.keys(data)).toEqual(["ipAddress", "isPublic", "ipVersion", "isWhitelisted", "abuseConfidenceScore", "countryCode", "usageType", "isp", "domain", "hostnames", "isTor", "totalReports", "numDistinctUsers", "lastReportedAt"]);
    expect(data).toMatchObject({ ipAddress: "8.8.8.8", isPublic: true, ipVersion: 4, isWhitelisted: false, abuseConfidenceScore: 0, usageType: "", domain: "", hostnames: [], isTor: false, totalReports: 0, numDistinctUsers: 0, lastReportedAt: null });
    expect(typeof data.isp).toBe("string");
  });

  test("special-purpose ranges are not public; IPv6 is version 6", async () => {
    for (const [ip, isPublic, version] of [["10.1.2.3", false, 4], ["192.0.2.1", false, 4], ["fe80::1", false, 6], ["2001:db8::1", false, 6], ["3fff::1", false, 6], ["2606:4700::1111", true, 6]] as const) {
      const { data } = (await (await get(`/api/v2/check?ipAddress=${ip}`)).json()) as { data: { isPublic: boolean; ipVersion: number } };
      expect([ip, data.isPublic, data.ipVersion]).toEqual([ip, isPublic, version]);
    }
  });

  test.each([
    ["verbose", true],
    ["verbose=", true],
    ["verbose=1", true],
    ["verbose=true", true],
    ["verbose=yes", true],
    ["verbose=false", false],
    ["verbose=0", false],
  ])("flag %s -> verbose %p", async (query, on) => {
    const { data } = (await (await get(`/api/v2/check?ipAddress=9.9.9.9&${query}`)).json()) as { data: Record<string, unknown> };
    expect("countryName" in data).toBe(on);
    expect("reports" in data).toBe(on);
  });

  test.each([
    ["", "ipAddress"],
    ["ipAddress=not-an-ip", "ipAddress"],
    ["ipAddress=1.2.3.4&maxAgeInDays=0", "maxAgeInDays"],
    ["ipAddress=1.2.3.4&maxAgeInDays=366", "maxAgeInDays"],
    ["ipAddress=1.2.3.4&maxAgeInDays=abc", "maxAgeInDays"],
  ])("?%s is 422 naming %s", async (query, parameter) => {
    const res = await get(`/api/v2/check?${query}`);
    expect(res.status).toBe(422);
    const body = (await res.json()) as { errors: { detail: string; status: number; source?: { parameter: string } }[] };
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0].status).toBe(422);
    expect(body.errors[0].source).toEqual({ parameter });
    expect(typeof body.errors[0].detail).toBe("string");
  });

  test("unknown parameters are ignored", async () => {
    expect((await get("/api/v2/check?ipAddress=8.8.4.4&countMinimum=15&whatever=1")).status).toBe(200);
  });
});

describe("credentials, headers and errors", () => {
  const AUTH_FAILED = "Authentication failed. Your API key is either missing, incorrect, or revoked.";

  test.each([
    ["no key", null],
    ["a wrong key", `aik_${"0".repeat(40)}`],
  ])("%s: 401 with AbuseIPDB's text and the rate-limit headers", async (_, key) => {
    const res = await get("/api/v2/check?ipAddress=8.8.8.8", key);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ errors: [{ detail: AUTH_FAILED, status: 401 }] });
    expect(res.headers.get("x-ratelimit-limit")).not.toBeNull();
  });

  test("the key in the query string works too", async () => {
    const res = await get(`/api/v2/check?ipAddress=8.8.8.8&key=${encodeURIComponent(reporter.key)}`, null);
    expect(res.status).toBe(200);
  });

  test("every answer counts once and carries X-RateLimit-*; unlimited accounts a documented constant", async () => {
    const first = await get("/api/v2/check?ipAddress=8.8.8.8");
    const second = await get("/api/v2/check?ipAddress=8.8.8.8");
    expect(first.headers.get("x-ratelimit-limit")).toBe("1000");
    expect(Number(first.headers.get("x-ratelimit-remaining")) - Number(second.headers.get("x-ratelimit-remaining"))).toBe(1);
    expect(Number(first.headers.get("x-ratelimit-reset"))).toBeGreaterThan(h.clock.now() / 1000);
    const bad = await get("/api/v2/check?ipAddress=bogus");
    expect(bad.headers.get("x-ratelimit-remaining")).not.toBeNull();
    const free = await get("/api/v2/check?ipAddress=8.8.8.8", unlimited.key);
    expect(free.headers.get("x-ratelimit-limit")).toBe(String(UNLIMITED_RATE_LIMIT));
    expect(free.headers.get("x-ratelimit-remaining")).toBe(String(UNLIMITED_RATE_LIMIT));
  });

  test("over budget: 429 with AbuseIPDB's text, Retry-After and the headers", async () => {
    const tiny = await addUser(h, { dailyLimit: 1 });
    expect((await get("/api/v2/check?ipAddress=8.8.8.8", tiny.key)).status).toBe(200);
    const res = await get("/api/v2/check?ipAddress=8.8.8.8", tiny.key);
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ errors: [{ detail: "Daily rate limit of 1 requests exceeded for this endpoint. See headers for additional details.", status: 429 }] });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get("x-ratelimit-remaining")).toBe("0");
  });

  test("unknown path 404 and wrong method 405, in the same shape", async () => {
    const missing = await get("/api/v2/nothing-here");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { errors: { status: number }[] }).errors[0].status).toBe(404);
    const wrong = await post("/api/v2/check", form({ ipAddress: "8.8.8.8" }));
    expect(wrong.status).toBe(405);
    expect(((await wrong.json()) as { errors: { status: number }[] }).errors[0].status).toBe(405);
  });
});

describe("report", () => {
  test("as fail2ban sends it (form fields): one report of ours per category, credited, the score after it", async () => {
    const before = ((await (await h.call("GET", "/v1/credits/balance", { headers: reporter.jwt })).json()) as { data: { balance: number } }).data.balance;
    const res = await post("/api/v2/report", form({ ip: "198.51.100.20", categories: "18,22", comment: "sshd: Failed password for root" }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { ipAddress: string; abuseConfidenceScore: number } };
    const v1 = await v1Score("198.51.100.20");
    expect(body).toEqual({ data: { ipAddress: "198.51.100.20", abuseConfidenceScore: 100 - v1.reputationScore } });
    expect(body.data.abuseConfidenceScore).toBeGreaterThan(0);
    expect(v1.totalReports).toBe(2);
    expect([...v1.categories].sort()).toEqual(["BRUTE_FORCE", "SSH"]);
    const after = ((await (await h.call("GET", "/v1/credits/balance", { headers: reporter.jwt })).json()) as { data: { balance: number } }).data.balance;
    expect(after - before).toBe(2);
  });

  test("the same address again within 15 minutes: 429 with the exact text naming ip; after 15 minutes it is taken", async () => {
    const fields = { ip: "198.51.100.21", categories: "14" };
    expect((await post("/api/v2/report", form(fields))).status).toBe(200);
    const again = await post("/api/v2/report", form(fields));
    expect(again.status).toBe(429);
    expect(await again.json()).toEqual({ errors: [{ detail: "You can only report the same IP address (`198.51.100.21`) once in 15 minutes.", status: 429, source: { parameter: "ip" } }] });
    expect(again.headers.get("retry-after")).not.toBeNull();
    expect(again.headers.get("x-ratelimit-limit")).toBe("1000");
    h.clock.advance(15 * 60_000 + 1000);
    expect((await post("/api/v2/report", form(fields))).status).toBe(200);
  });

  test("one 15-minute rule for both APIs", async () => {
    const v1 = await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ip: "198.51.100.22", category: "SSH" } });
    expect(v1.status).toBe(201);
    expect((await post("/api/v2/report", form({ ip: "198.51.100.22", categories: "22" }))).status).toBe(429);
  });

  test("fields in the query string of the POST, or as JSON, are read the same", async () => {
    const viaQuery = await fetch(`${base()}/api/v2/report?ip=198.51.100.23&categories=4&comment=flood`, { method: "POST", headers: { Key: reporter.key } });
    expect(viaQuery.status).toBe(200);
    const viaJson = await post("/api/v2/report", JSON.stringify({ ip: "198.51.100.24", categories: "4,14" }), reporter.key, { "content-type": "application/json" });
    expect(viaJson.status).toBe(200);
    expect((await v1Score("198.51.100.24")).totalReports).toBe(2);
  });

  test("a comment longer than 1,024 characters is cut, not refused", async () => {
    const res = await post("/api/v2/report", form({ ip: "198.51.100.25", categories: "18", comment: "x".repeat(5000) }));
    expect(res.status).toBe(200);
    const row = h.store.sqlite.query<{ n: number }, []>("SELECT length(description) AS n FROM reports WHERE ip = '198.51.100.25'").get();
    expect(row?.n).toBe(1024);
  });

  test.each([
    [{ categories: "18" }, "ip"],
    [{ ip: "127.0.0.1", categories: "18" }, "ip"],
    [{ ip: "198.51.100.26" }, "categories"],
    [{ ip: "198.51.100.26", categories: "24" }, "categories"],
    [{ ip: "198.51.100.26", categories: "18,abc" }, "categories"],
    [{ ip: "198.51.100.26", categories: "18", timestamp: "yesterday" }, "timestamp"],
  ])("%j is 422 naming %s, and nothing is stored", async (fields, parameter) => {
    const before = h.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM reports").get()!.n;
    const res = await post("/api/v2/report", form(fields as Record<string, string>));
    expect(res.status).toBe(422);
    expect(((await res.json()) as { errors: { source: { parameter: string } }[] }).errors[0].source.parameter).toBe(parameter);
    expect(h.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM reports").get()!.n).toBe(before);
  });

  test("reports made here have severity 3 and the source abuseipdb", () => {
    const rows = h.store.sqlite.query<{ severity: number; source: string }, []>("SELECT DISTINCT severity, source FROM reports WHERE ip = '198.51.100.20'").all();
    expect(rows).toEqual([{ severity: 3, source: "abuseipdb" }]);
  });
});

describe("reports", () => {
  test("pages newest first with absolute page URLs", async () => {
    for (let i = 0; i < 3; i++) {
      const who = [reporter, other, admin][i];
      expect((await post("/api/v2/report", form({ ip: "198.51.100.30", categories: "14", comment: `scan ${i}` }), who.key)).status).toBe(200);
      h.clock.advance(1000);
    }
    const res = await get("/api/v2/reports?ipAddress=198.51.100.30&perPage=2&page=1");
    const { data } = (await res.json()) as { data: Record<string, unknown> & { results: Record<string, unknown>[] } };
    expect(data).toMatchObject({ total: 3, page: 1, count: 2, perPage: 2, lastPage: 2, previousPageUrl: null });
    expect(String(data.nextPageUrl)).toStartWith(`${base()}/api/v2/reports?`);
    expect(new URL(String(data.nextPageUrl)).searchParams.get("page")).toBe("2");
    expect(data.results.map((r) => r.comment)).toEqual(["scan 2", "scan 1"]);
    expect(Object.keys(data.results[0])).toEqual(["reportedAt", "comment", "categories", "reporterId", "reporterCountryCode", "reporterCountryName"]);
    expect(data.results[0].categories).toEqual([14]);
    expect(data.results[0].reportedAt).toMatch(TIME);
    const last = (await (await fetch(String(data.nextPageUrl), { headers: { Key: reporter.key } })).json()) as { data: { count: number; nextPageUrl: unknown; previousPageUrl: unknown } };
    expect(last.data).toMatchObject({ count: 1, nextPageUrl: null });
    expect(last.data.previousPageUrl).not.toBeNull();
  });

  test("check counts the same reports, distinct users and the last time", async () => {
    const { data } = (await (await get("/api/v2/check?ipAddress=198.51.100.30&verbose")).json()) as { data: Record<string, unknown> & { reports: unknown[] } };
    expect(data).toMatchObject({ totalReports: 3, numDistinctUsers: 3 });
    expect(data.lastReportedAt).toMatch(TIME);
    expect(data.reports).toHaveLength(3);
  });

  test("perPage over 100 is 422", async () => {
    expect((await get("/api/v2/reports?ipAddress=198.51.100.30&perPage=101")).status).toBe(422);
  });
});

describe("blacklist", () => {
  test("JSON, highest confidence first, confidenceMinimum filters; plaintext has no newline after the last line", async () => {
    // Drive one address to confidence 100: many reporters at severity 5 on /v1.
    for (let i = 0; i < 6; i++) {
      const u = await addUser(h);
      await h.call("POST", "/v1/ip/report", { headers: u.jwt, json: { ipAddress: "198.51.100.40", category: "SSH", description: "", severity: 5 } });
    }
    const all = (await (await get("/api/v2/blacklist?confidenceMinimum=25&countMinimum=10&maxAgeInDays=30")).json()) as {
      meta: { generatedAt: string };
      data: { ipAddress: string; countryCode: unknown; abuseConfidenceScore: number; lastReportedAt: string }[];
    };
    expect(all.meta.generatedAt).toMatch(TIME);
    expect(all.data.length).toBeGreaterThan(1);
    expect(Object.keys(all.data[0])).toEqual(["ipAddress", "countryCode", "abuseConfidenceScore", "lastReportedAt"]);
    const scores = all.data.map((e) => e.abuseConfidenceScore);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(Math.min(...scores)).toBeGreaterThanOrEqual(25);
    expect(all.data[0].lastReportedAt).toMatch(TIME);

    const strict = (await (await get("/api/v2/blacklist")).json()) as { data: { abuseConfidenceScore: number }[] };
    expect(strict.data.every((e) => e.abuseConfidenceScore === 100)).toBe(true);

    const plain = await get("/api/v2/blacklist?confidenceMinimum=25&plaintext");
    expect(plain.headers.get("content-type")).toStartWith("text/plain");
    expect(plain.headers.get("x-generated-at")).toMatch(TIME);
    const text = await plain.text();
    expect(text.endsWith("\n")).toBe(false);
    expect(text.split("\n")).toEqual(all.data.map((e) => e.ipAddress));

    const limited = (await (await get("/api/v2/blacklist?confidenceMinimum=25&limit=1")).json()) as { data: unknown[] };
    expect(limited.data).toHaveLength(1);
    const v6 = (await (await get("/api/v2/blacklist?confidenceMinimum=25&ipVersion=6")).json()) as { data: unknown[] };
    expect(v6.data).toEqual([]);
  });

  test("allowlisted addresses never appear", async () => {
    await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: "198.51.100.40/32", note: "ours" } });
    const text = await (await get("/api/v2/blacklist?confidenceMinimum=25&plaintext")).text();
    expect(text.split("\n")).not.toContain("198.51.100.40");
    const { data } = (await (await get("/api/v2/check?ipAddress=198.51.100.40")).json()) as { data: { isWhitelisted: boolean } };
    expect(data.isWhitelisted).toBe(true);
  });

  test.each(["confidenceMinimum=24", "confidenceMinimum=101", "ipVersion=5", "onlyCountries=USA"])("%s is 422", async (query) => {
    expect((await get(`/api/v2/blacklist?${query}`)).status).toBe(422);
  });
});

describe("check-block", () => {
  test("a /24: bounds, 256 hosts, and the reported addresses inside it from the index", async () => {
    const { data } = (await (await get("/api/v2/check-block?network=198.51.100.7/24")).json()) as { data: Record<string, unknown> & { reportedAddress: { ipAddress: string; numReports: number; mostRecentReport: string }[] } };
    expect(data).toMatchObject({ networkAddress: "198.51.100.0", netmask: "255.255.255.0", minAddress: "198.51.100.0", maxAddress: "198.51.100.255", numPossibleHosts: 256, addressSpaceDesc: "Documentation (TEST-NET-2)" });
    const found = data.reportedAddress.map((r) => r.ipAddress);
    expect(found).toContain("198.51.100.30");
    expect(found).toContain("198.51.100.20");
    expect(found.every((ip) => ip.startsWith("198.51.100."))).toBe(true);
    expect(data.reportedAddress.find((r) => r.ipAddress === "198.51.100.30")?.numReports).toBe(3);
    expect(data.reportedAddress[0].mostRecentReport).toMatch(TIME);
  });

  test("the widest blocks are a /16 and a /48", async () => {
    expect((await get("/api/v2/check-block?network=10.0.0.0/16")).status).toBe(200);
    expect((await get("/api/v2/check-block?network=10.0.0.0/15")).status).toBe(422);
    const v6 = await get("/api/v2/check-block?network=2001:db8:1::/48");
    expect(v6.status).toBe(200);
    expect(((await v6.json()) as { data: { netmask: string } }).data.netmask).toBe("ffff:ffff:ffff::");
    expect((await get("/api/v2/check-block?network=2001:db8::/47")).status).toBe(422);
    expect((await get("/api/v2/check-block?network=10.0.0.1")).status).toBe(422);
  });
});

describe("bulk-report", () => {
  test("multipart csv: good rows saved, others listed with their row numbers", async () => {
    const csv = [
      "IP,Categories,ReportDate,Comment",
      "192.0.2.60,18,2026-11-20T10:00:00Z,ssh",
      "not-an-ip,18,2026-11-20T10:00:00Z,x",
      "192.0.2.61,99,2026-11-20T10:00:00Z,x",
      '192.0.2.62,"18,22",2026-11-20T10:00:00-04:00,"a, quoted comment"',
      "192.0.2.60,14,2026-11-20T10:00:00Z,again",
    ].join("\n");
    const body = new FormData();
    body.append("csv", new Blob([csv], { type: "text/csv" }), "report.csv");
    const res = await fetch(`${base()}/api/v2/bulk-report`, { method: "POST", body, headers: { Key: reporter.key } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      data: {
        savedReports: 2,
        invalidReports: [
          { error: "Invalid IP", input: "not-an-ip", rowNumber: 3 },
          { error: "Invalid Category", input: "192.0.2.61", rowNumber: 4 },
          { error: "Duplicate IP", input: "192.0.2.60", rowNumber: 6 },
        ],
      },
    });
    expect((await v1Score("192.0.2.62")).totalReports).toBe(2);
  });

  test("at most 10,000 reports, with or without a header line: one more is 422 and stores nothing", async () => {
    const send = async (lines: string[]) => {
      const body = new FormData();
      body.append("csv", new Blob([lines.join("\n")], { type: "text/csv" }), "report.csv");
      return fetch(`${base()}/api/v2/bulk-report`, { method: "POST", body, headers: { Key: reporter.key } });
    };
    // Rows that are all refused, so an accepted csv stores nothing either and only the count decides.
    const rows = (n: number) => Array.from({ length: n }, () => "not-an-ip,18,2026-11-20T10:00:00Z,x");
    for (const header of [[], ["IP,Categories,ReportDate,Comment"]]) {
      const full = await send([...header, ...rows(10_000)]);
      expect(full.status).toBe(200);
      expect(((await full.json()) as { data: { invalidReports: unknown[] } }).data.invalidReports).toHaveLength(10_000);
      const over = await send([...header, ...rows(10_001)]);
      expect(over.status).toBe(422);
      expect(JSON.stringify(await over.json())).toContain("at most 10000 reports");
    }
  });

  test("a row that cannot be written is listed as not saved, none of its categories kept; the other rows are saved", async () => {
    // The second category of one row fails its INSERT (after the first was written), in the same batch as others.
    h.store.sqlite.exec(`CREATE TRIGGER test_refuse_row BEFORE INSERT ON reports WHEN NEW.ip = '192.0.2.71' AND NEW.category = 'SSH'
                         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    try {
      const csv = ["IP,Categories,ReportDate,Comment", "192.0.2.70,18,,a", '192.0.2.71,"18,22",,b', "192.0.2.72,22,,c"].join("\n");
      const body = new FormData();
      body.append("csv", new Blob([csv], { type: "text/csv" }), "report.csv");
      const res = await fetch(`${base()}/api/v2/bulk-report`, { method: "POST", body, headers: { Key: reporter.key } });
      expect({ status: res.status, body: await res.json() }).toEqual({
        status: 200,
        body: { data: { savedReports: 2, invalidReports: [{ error: "Not Saved: Internal Error", input: "192.0.2.71", rowNumber: 3 }] } },
      });
      const stored = h.store.sqlite.query("SELECT ip, count(*) AS n FROM reports WHERE ip IN ('192.0.2.70', '192.0.2.71', '192.0.2.72') GROUP BY ip ORDER BY ip").all();
      expect(stored).toEqual([{ ip: "192.0.2.70", n: 1 }, { ip: "192.0.2.72", n: 1 }]);
    } finally {
      h.store.sqlite.exec("DROP TRIGGER test_refuse_row");
    }
  });

  test("a file of 10,000 rows does not hold other requests: lookups are answered while it is written", async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => `100.64.${i >> 8}.${i & 255},"18,22,14",,row ${i}`);
    const body = new FormData();
    body.append("csv", new Blob([["IP,Categories,ReportDate,Comment", ...rows].join("\n")], { type: "text/csv" }), "report.csv");
    let done = false;
    const bulk = fetch(`${base()}/api/v2/bulk-report`, { method: "POST", body, headers: { Key: unlimited.key } }).finally(() => (done = true));
    // Lookups one after another until the bulk report is answered: held for its whole run, at most the one sent
    // first would be answered before it (no time is measured: a slower machine only answers more of them).
    let answeredMeanwhile = 0;
    while (!done) {
      const lookup = await fetch(`${base()}/api/v2/check?ipAddress=192.0.2.1`, { headers: { Key: unlimited.key } });
      await lookup.arrayBuffer();
      if (!done) answeredMeanwhile++;
    }
    const saved = ((await (await bulk).json()) as { data: { savedReports: number } }).data.savedReports;
    expect(saved).toBe(10_000);
    expect(answeredMeanwhile).toBeGreaterThanOrEqual(3);
  });

  test("without a csv field it is 422 naming csv", async () => {
    const res = await post("/api/v2/bulk-report", new FormData());
    expect(res.status).toBe(422);
  });
});

describe("clear-address", () => {
  const del = (ip: string, key: string) => fetch(`${base()}/api/v2/clear-address?ipAddress=${ip}`, { method: "DELETE", headers: { Key: key } });

  test("a reporter clears only their own reports; an admin clears the rest; rescored at once", async () => {
    expect((await v1Score("198.51.100.30")).totalReports).toBe(3);
    const own = await del("198.51.100.30", other.key);
    expect(await own.json()).toEqual({ data: { numReportsDeleted: 1 } });
    expect((await v1Score("198.51.100.30")).totalReports).toBe(2);
    const rest = await del("198.51.100.30", admin.key);
    expect(await rest.json()).toEqual({ data: { numReportsDeleted: 2 } });
    const after = await v1Score("198.51.100.30");
    expect(after).toMatchObject({ totalReports: 0, reputationScore: 100 });
  });

  test("clearing one's own report does not reopen the 15-minute rule: 429 until 15 minutes after the report", async () => {
    const fields = form({ ip: "198.51.100.40", categories: "18,22" });
    expect((await post("/api/v2/report", fields, other.key)).status).toBe(200);
    expect(await (await del("198.51.100.40", other.key)).json()).toEqual({ data: { numReportsDeleted: 2 } });
    h.clock.advance(60_000);
    const again = await post("/api/v2/report", fields, other.key);
    expect({ status: again.status, retryAfter: again.headers.get("retry-after") }).toEqual({ status: 429, retryAfter: String(14 * 60) });
    h.clock.advance(14 * 60_000);
    expect((await post("/api/v2/report", fields, other.key)).status).toBe(200);
  });

  test("what cleared reports earned is taken back, as a rejection does; a rejected one gives nothing back twice", async () => {
    const balance = async () => ((await (await h.call("GET", "/v1/credits/balance", { headers: other.jwt })).json()) as { data: { balance: number; lifetimeEarned: number } }).data;
    const reportOf = (ip: string) => h.store.sqlite.query<{ id: number }, [string]>("SELECT id FROM reports WHERE ip = ?").get(ip)!.id;
    const setStatus = (ip: string, status: string) => h.call("PATCH", `/v1/admin/reports/${reportOf(ip)}`, { headers: admin.jwt, json: { status } });
    const before = await balance();
    for (const [ip, categories] of [["198.51.100.41", "18,22"], ["198.51.100.42", "18"], ["198.51.100.43", "18"]]) {
      expect((await post("/api/v2/report", form({ ip, categories }), other.key)).status).toBe(200);
    }
    expect((await setStatus("198.51.100.42", "rejected")).status).toBe(200);
    expect((await setStatus("198.51.100.43", "verified")).status).toBe(200);
    const earned = await balance();
    expect(earned.balance - before.balance).toBe(2 + 0 + 3);
    const lastRow = h.store.sqlite.query<{ id: number }, []>("SELECT max(id) AS id FROM credit_ledger").get()!.id;
    // The reporter clears their own; an admin clears the others.
    expect(await (await del("198.51.100.41", other.key)).json()).toEqual({ data: { numReportsDeleted: 2 } });
    for (const ip of ["198.51.100.42", "198.51.100.43"]) expect(await (await del(ip, admin.key)).json()).toEqual({ data: { numReportsDeleted: 1 } });
    expect(await balance()).toMatchObject({ balance: before.balance, lifetimeEarned: earned.lifetimeEarned });
    const rows = h.store.sqlite.query("SELECT user_id AS userId, delta, reason FROM credit_ledger WHERE id > ? ORDER BY id").all(lastRow);
    expect(rows).toEqual([-1, -1, -3].map((delta) => ({ userId: other.user.id, delta, reason: "report_cleared" })));
  });
});

describe("the /v1 answer cache", () => {
  // Contract 5.2: a new report makes the next lookup `cached: false`; a v2 call is not a /v1 lookup.
  const cachedOf = async (ip: string) => ((await (await h.call("GET", `/v1/ip/${ip}/reputation`, { headers: reporter.apiKey })).json()) as { data: { cached: boolean } }).data.cached;

  test("a report through /api/v2/report makes the next /v1 lookup cached: false, as one through /v1 does", async () => {
    const ip = "198.51.100.109";
    expect([await cachedOf(ip), await cachedOf(ip)]).toEqual([false, true]);
    const res = await post("/api/v2/report", form({ ip, categories: "18" }), other.key);
    expect(res.status).toBe(200);
    expect(await cachedOf(ip)).toBe(false);
    expect(await cachedOf(ip)).toBe(true);
  });

  test("/api/v2/check does not count as a /v1 lookup: the first one after it is still cached: false", async () => {
    for (const ip of ["198.51.100.111", "192.0.2.211"]) {
      expect((await get(`/api/v2/check?ipAddress=${ip}`)).status).toBe(200);
      expect((await get(`/api/v2/check?ipAddress=${ip}`)).status).toBe(200);
      expect(await cachedOf(ip)).toBe(false);
    }
  });
});

describe("the OpenAPI document", () => {
  test("documents exactly the endpoints served, each with the Key credential; anonymous 401, with a key not", async () => {
    const paths = buildOpenApiDocument().paths as Record<string, Record<string, { security: unknown; "x-access": string }>>;
    const documented = Object.entries(paths).filter(([p]) => p.startsWith("/api/v2/")).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    const served = Object.entries(ABUSEIPDB_ENDPOINTS).flatMap(([name, methods]) => methods.map((m) => `${m} /api/v2/${name}`));
    expect(documented.sort()).toEqual(served.sort());
    for (const [name, methods] of Object.entries(ABUSEIPDB_ENDPOINTS)) {
      for (const method of methods) {
        expect(paths[`/api/v2/${name}`][method.toLowerCase()].security).toEqual([{ AbuseIpdbKey: [] }]);
        const anonymous = await fetch(`${base()}/api/v2/${name}`, { method });
        expect({ name, status: anonymous.status }).toEqual({ name, status: 401 });
        const withKey = await fetch(`${base()}/api/v2/${name}`, { method, headers: { Key: other.key } });
        expect({ name, refused: withKey.status === 401 || withKey.status === 404 || withKey.status === 405 }).toEqual({ name, refused: false });
      }
    }
  });
});
