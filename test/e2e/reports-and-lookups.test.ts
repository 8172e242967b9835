// The main loop on the built executable, as operators meet it: the embedded enrichment from an empty directory
// (`geo lookup`), reports in both payload shapes, lookups, bulk, recent and the credit balance.
// Contract sections 5.1-5.9 and 10.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createSandbox, parseFirstStartCredentials, runCli, type Sandbox } from "./support/binary";
import { bodyOf, startServer, type RunningServer } from "./support/server";

let sandbox: Sandbox;
let server: RunningServer;
let token: string;
let key: string;

beforeAll(async () => {
  sandbox = createSandbox();
  server = await startServer(sandbox);
  const admin = parseFirstStartCredentials(server.output());
  if (!admin?.apiKey) throw new Error(`no first-start credentials in:\n${server.output()}`);
  key = admin.apiKey;
  const login = await bodyOf(await server.request("POST", "/v1/auth/login", { json: { email: admin.email, password: admin.password } }));
  token = login.data.accessToken;
});

afterAll(async () => {
  await server?.stop();
  sandbox?.cleanup();
});

const jwt = () => ({ authorization: `Bearer ${token}` });
const withKey = () => ({ "x-api-key": key });

describe("geo lookup from an empty directory", () => {
  test("8.8.8.8 is US, AS15169, Google LLC from the embedded data", async () => {
    const empty = createSandbox();
    try {
      const result = await runCli(empty, ["geo", "lookup", "8.8.8.8", "--data-dir", empty.dataDir]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe("8.8.8.8: US United States; AS15169 Google LLC\n");
      const json = await runCli(empty, ["geo", "lookup", "--json", "2001:4860:4860::8888", "--data-dir", empty.dataDir]);
      expect(JSON.parse(json.stdout)).toEqual({ ip: "2001:4860:4860::8888", countryCode: "US", country: "United States", asn: 15169, isp: "Google LLC", city: null });
    } finally {
      empty.cleanup();
    }
  });

  test("a bad address is refused with a non-zero exit", async () => {
    const result = await runCli(sandbox, ["geo", "lookup", "010.0.0.1", "--data-dir", sandbox.dataDir]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("010.0.0.1");
  });
});

describe("reports and lookups", () => {
  test("shape A and shape B both give 201 with the same response shape", async () => {
    const a = await server.request("POST", "/v1/ip/report", {
      headers: jwt(),
      json: { ipAddress: "8.8.8.8", category: "BRUTE_FORCE", description: "ssh brute force", severity: 5 },
    });
    expect(a.status).toBe(201);
    const bodyA = await bodyOf(a);
    expect(bodyA).toMatchObject({ success: true, message: "Report accepted", data: { ipAddress: "8.8.8.8", category: "BRUTE_FORCE", severity: 5, status: "pending", creditsEarned: 1, creditBalance: 1 } });
    expect(bodyA.reportId).toBe(bodyA.data.reportId);

    const b = await server.request("POST", "/v1/ip/report", {
      headers: jwt(),
      json: { ip: "2001:db8::1", category: "port-scan", severity: "high", evidence: "nmap" },
    });
    expect(b.status).toBe(201);
    const bodyB = await bodyOf(b);
    expect(Object.keys(bodyB).sort()).toEqual(Object.keys(bodyA).sort());
    expect(Object.keys(bodyB.data).sort()).toEqual(Object.keys(bodyA.data).sort());
    expect(bodyB.data).toMatchObject({ ipAddress: "2001:db8::1", category: "PORT_SCAN", severity: 4, creditBalance: 2 });
  });

  test("an API key cannot report: reports are attributed to an account", async () => {
    const res = await server.request("POST", "/v1/ip/report", { headers: withKey(), json: { ip: "8.8.4.4", category: "SPAM" } });
    expect(res.status).toBe(401);
  });

  test("the detail record shows the report with enrichment", async () => {
    const body = await bodyOf(await server.request("GET", "/v1/ip/8.8.8.8", { headers: withKey() }));
    expect(body).toMatchObject({
      success: true,
      ip: "8.8.8.8",
      country: "United States",
      countryCode: "US",
      isp: "Google LLC",
      asn: 15169,
      reports: 1,
      threatLevel: "medium",
      abuse_confidence: 49,
      reputationScore: 51,
      categories: ["BRUTE_FORCE"],
    });
  });

  test("the reputation envelope, cached the second time", async () => {
    const first = await bodyOf(await server.request("GET", "/v1/ip/8.8.8.8/reputation", { headers: { authorization: `Bearer ${key}` } }));
    expect(first.data).toEqual({ ipAddress: "8.8.8.8", reputationScore: 51, riskLevel: "MEDIUM", totalReports: 1, verifiedReports: 0, categories: ["BRUTE_FORCE"], country: "US", isp: "Google LLC", cached: false });
    const second = await bodyOf(await server.request("GET", "/v1/ip/8.8.8.8/reputation", { headers: withKey() }));
    expect(second.data.cached).toBe(true);
  });

  test("bulk keeps order and duplicates and lists invalid entries", async () => {
    const body = await bodyOf(await server.request("POST", "/v1/ip/bulk", { headers: withKey(), json: { ips: ["2001:DB8::1", "nope", "8.8.8.8", "8.8.8.8"] } }));
    expect(body.data.results.map((r: { ipAddress: string; reputationScore: number }) => [r.ipAddress, r.reputationScore])).toEqual([
      ["2001:db8::1", 59],
      ["8.8.8.8", 51],
      ["8.8.8.8", 51],
    ]);
    expect(body.data.invalid.map((i: { input: string }) => i.input)).toEqual(["nope"]);
  });

  test("recent lists the newest report first", async () => {
    const body = await bodyOf(await server.request("GET", "/v1/ip/recent?limit=10", { headers: withKey() }));
    expect(body.pagination).toEqual({ limit: 10, offset: 0, total: 2, next: null });
    expect(body.data.map((r: { ipAddress: string }) => r.ipAddress)).toEqual(["2001:db8::1", "8.8.8.8"]);
    expect(body.data[1]).toMatchObject({ category: "BRUTE_FORCE", totalReports: 1, reputationScore: 51, riskLevel: "MEDIUM", country: "US" });
  });

  test("the credit balance counts both reports", async () => {
    const body = await bodyOf(await server.request("GET", "/v1/credits/balance", { headers: jwt() }));
    expect(body.data).toMatchObject({ balance: 2, lifetimeEarned: 2, reportsAccepted: 2, reportsVerified: 0 });
  });

  test("reports survive a restart, and the index is rebuilt from the store", async () => {
    expect(await server.stop("SIGKILL")).toBeNull();
    server = await startServer(sandbox);
    const body = await bodyOf(await server.request("GET", "/v1/ip/2001:db8::1", { headers: withKey() }));
    expect(body).toMatchObject({ reports: 1, reputationScore: 59, categories: ["PORT_SCAN"] });
  });
});
