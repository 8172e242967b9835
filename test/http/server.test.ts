// The listener of `serve` on a real port: the reputation and bulk routes go through Bun's own router
// (fast-routes.ts), so their answers are checked here against the same requests sent through the Elysia app.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { listen } from "../../src/http/server";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let server: Server<undefined>;
let counted: TestUser;
let tiny: TestUser;

beforeAll(async () => {
  h = await createHarness();
  counted = await addUser(h, { dailyLimit: 1000 });
  tiny = await addUser(h, { dailyLimit: 1 });
  server = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0 });
  await h.call("POST", "/v1/ip/report", { headers: counted.jwt, json: { ipAddress: "203.0.113.50", category: "SSH", description: "", severity: 5 } });
});
afterAll(async () => {
  server.stop(true);
  await h.close();
});

const overHttp = (path: string, headers: Record<string, string> = {}) => fetch(`http://127.0.0.1:${server.port}${path}`, { headers });
const headerView = (res: Response) => ({
  type: res.headers.get("content-type"),
  limit: res.headers.get("x-ratelimit-limit"),
  reset: res.headers.get("x-ratelimit-reset"),
  auth: res.headers.get("www-authenticate"),
  retry: res.headers.get("retry-after"),
});

describe("POST /v1/ip/bulk on Bun's router", () => {
  const post = (body: string, headers: Record<string, string>) =>
    fetch(`http://127.0.0.1:${server.port}/v1/ip/bulk`, { method: "POST", body, headers });

  test("the same answer as the app", async () => {
    const body = JSON.stringify({ ips: ["192.0.2.77", "bogus", "2001:DB8::1", "192.0.2.77"] });
    const headers = { ...counted.apiKey, "content-type": "application/json" };
    const fast = await post(body, headers);
    const viaApp = await h.call("POST", "/v1/ip/bulk", { headers, body });
    expect(fast.status).toBe(200);
    const [f, v] = (await Promise.all([fast.json(), viaApp.json()])) as { data: { results: { ipAddress: string }[]; invalid: unknown[] } }[];
    expect(f.data.results.map((r) => r.ipAddress)).toEqual(["192.0.2.77", "2001:db8::1", "192.0.2.77"]);
    expect(f.data.invalid).toEqual(v.data.invalid);
    expect(headerView(fast)).toEqual(headerView(viaApp));
  });

  test.each([
    ["no credential", '{"ips":["8.8.8.8"]}', { "content-type": "application/json" }, 401],
    ["a form body", "ips=8.8.8.8", { "content-type": "application/x-www-form-urlencoded" }, 415],
    ["malformed JSON", '{"ips":', { "content-type": "application/json" }, 400],
    ["no addresses", '{"ips":[]}', { "content-type": "application/json" }, 400],
    ["101 addresses", JSON.stringify({ ips: Array.from({ length: 101 }, () => "8.8.8.8") }), { "content-type": "application/json" }, 400],
    ["over 64 KiB", JSON.stringify({ ips: ["8.8.8.8"], pad: "x".repeat(70_000) }), { "content-type": "application/json" }, 413],
  ] as const)("%s: the same status and code as the app", async (what, body, extra, status) => {
    const headers = what === "no credential" ? { ...extra } : { ...counted.apiKey, ...extra };
    const fast = await post(body, headers);
    const viaApp = await h.call("POST", "/v1/ip/bulk", { headers, body });
    expect([fast.status, viaApp.status]).toEqual([status, status]);
    const [f, v] = (await Promise.all([fast.json(), viaApp.json()])) as { code: string }[];
    expect(f.code).toBe(v.code);
  });

  test("the route is counted in /metrics, answers and errors", async () => {
    const counts = async () => {
      const text = await (await overHttp("/metrics")).text();
      const of = (status: string) => Number(new RegExp(`requests_total\\{method="POST",route="/v1/ip/bulk",status="${status}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
      return [of("2xx"), of("4xx")];
    };
    const before = await counts();
    await post('{"ips":["8.8.8.8"]}', { ...counted.apiKey, "content-type": "application/json" });
    await post('{"ips":"8.8.8.8"}', { ...counted.apiKey, "content-type": "application/json" });
    await post('{"ips":["8.8.8.8"]}', { "content-type": "application/json" });
    expect(await counts()).toEqual([before[0] + 1, before[1] + 2]);
  });

  test("other methods on the path still go to the app", async () => {
    const fast = await overHttp("/v1/ip/bulk", counted.apiKey);
    const viaApp = await h.call("GET", "/v1/ip/bulk", { headers: counted.apiKey });
    expect(fast.status).toBe(viaApp.status);
  });
});

describe("GET /v1/ip/{ip}/reputation on Bun's router", () => {
  test("the same body as the app, cached false then true, and the rate-limit headers", async () => {
    const first = await overHttp("/v1/ip/203.0.113.50/reputation", counted.apiKey);
    const second = await overHttp("/v1/ip/203.0.113.50/reputation", counted.apiKey);
    const viaApp = await h.call("GET", "/v1/ip/203.0.113.50/reputation", { headers: counted.apiKey });
    expect(first.status).toBe(200);
    const [a, b, c] = [await first.json(), await second.json(), await viaApp.json()] as { data: { cached: boolean } }[];
    expect(a.data.cached).toBe(false);
    expect(b.data.cached).toBe(true);
    expect(b).toEqual(c);
    expect(a).toMatchObject({ success: true, data: { ipAddress: "203.0.113.50", reputationScore: 51, riskLevel: "MEDIUM", totalReports: 1 } });
    expect(headerView(first)).toEqual(headerView(viaApp));
    const remaining = [first, second, viaApp].map((r) => Number(r.headers.get("x-ratelimit-remaining")));
    expect(remaining[1]).toBe(remaining[0] - 1);
    expect(remaining[2]).toBe(remaining[1] - 1);
  });

  test.each([
    ["no credential", "/v1/ip/8.8.8.8/reputation", {}, 401],
    ["a bad key", "/v1/ip/8.8.8.8/reputation", { "x-api-key": "aik_nope" }, 401],
    ["a bad address", "/v1/ip/010.0.0.1/reputation", null, 400],
    ["an undecodable path", "/v1/ip/%E0%A4%A/reputation", null, 400],
    ["a percent-encoded IPv6 address", "/v1/ip/2001%3Adb8%3A%3A1/reputation", null, 200],
  ] as const)("%s: the same status and error body as the app", async (_what, path, headers, status) => {
    const sent = headers ?? counted.apiKey;
    const fast = await overHttp(path, sent);
    const viaApp = await h.call("GET", path, { headers: sent });
    expect(fast.status).toBe(status);
    expect(viaApp.status).toBe(status);
    const [f, v] = [await fast.json(), await viaApp.json()] as { code?: string; error?: string }[];
    if (status !== 200) expect({ code: f.code }).toEqual({ code: v.code });
    expect(headerView(fast).auth).toBe(headerView(viaApp).auth);
  });

  test("over budget: 429 with Retry-After and the rate-limit headers", async () => {
    expect((await overHttp("/v1/ip/8.8.8.8/reputation", tiny.apiKey)).status).toBe(200);
    const limited = await overHttp("/v1/ip/8.8.8.8/reputation", tiny.apiKey);
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as { code: string }).code).toBe("rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
  });

  test("every other route still goes through the app", async () => {
    const res = await overHttp("/v1/ip/203.0.113.50", counted.apiKey);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { reports: number }).reports).toBe(1);
    expect((await overHttp("/nope")).status).toBe(404);
  });

  test("the route is counted in /metrics", async () => {
    const text = await (await overHttp("/metrics")).text();
    expect(text).toMatch(/abuse_intel_http_requests_total\{method="GET",route="\/v1\/ip\/:ip\/reputation",status="2xx"\} [1-9]/);
  });
});
