// The listener of `serve` on a real port: the reputation and bulk routes are served only by Bun's own router
// (fast-routes.ts), so their answers, errors, headers and counting are checked here against the contract.

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

  test("results in order, invalid inputs listed, the rate-limit headers", async () => {
    const body = JSON.stringify({ ips: ["192.0.2.77", "bogus", "2001:DB8::1", "192.0.2.77"] });
    const headers = { ...counted.apiKey, "content-type": "application/json" };
    const fast = await post(body, headers);
    expect(fast.status).toBe(200);
    const f = (await fast.json()) as { data: { results: { ipAddress: string }[]; invalid: { input: string }[] } };
    expect(f.data.results.map((r) => r.ipAddress)).toEqual(["192.0.2.77", "2001:db8::1", "192.0.2.77"]);
    expect(f.data.invalid.map((i) => i.input)).toEqual(["bogus"]);
    expect(headerView(fast)).toMatchObject({ type: "application/json;charset=utf-8", limit: "1000", auth: null, retry: null });
    expect(Number(headerView(fast).reset)).toBeGreaterThan(0);
  });

  test.each([
    ["no credential", '{"ips":["8.8.8.8"]}', { "content-type": "application/json" }, 401, "unauthorized"],
    ["a form body", "ips=8.8.8.8", { "content-type": "application/x-www-form-urlencoded" }, 415, "unsupported_media_type"],
    ["malformed JSON", '{"ips":', { "content-type": "application/json" }, 400, "bad_request"],
    ["no addresses", '{"ips":[]}', { "content-type": "application/json" }, 400, "validation_failed"],
    ["101 addresses", JSON.stringify({ ips: Array.from({ length: 101 }, () => "8.8.8.8") }), { "content-type": "application/json" }, 400, "validation_failed"],
    ["over 64 KiB", JSON.stringify({ ips: ["8.8.8.8"], pad: "x".repeat(70_000) }), { "content-type": "application/json" }, 413, "payload_too_large"],
  ] as const)("%s: the contract's status and code", async (what, body, extra, status, code) => {
    const headers = what === "no credential" ? { ...extra } : { ...counted.apiKey, ...extra };
    const fast = await post(body, headers);
    expect(fast.status).toBe(status);
    expect(((await fast.json()) as { success: boolean; code: string })).toMatchObject({ success: false, code });
    if (status === 401) expect(fast.headers.get("www-authenticate")).toBe("Bearer");
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

  test("other methods on the path go to the app, which has no such route", async () => {
    const res = await overHttp("/v1/ip/bulk", counted.apiKey);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("bad_request");
  });
});

describe("GET /v1/ip/{ip}/reputation on Bun's router", () => {
  test("the body, cached false then true, and the rate-limit headers", async () => {
    const first = await overHttp("/v1/ip/203.0.113.50/reputation", counted.apiKey);
    const second = await overHttp("/v1/ip/203.0.113.50/reputation", counted.apiKey);
    expect(first.status).toBe(200);
    const [a, b] = [await first.json(), await second.json()] as { data: { cached: boolean } }[];
    expect(a.data.cached).toBe(false);
    expect(b.data.cached).toBe(true);
    expect({ ...b, data: { ...b.data, cached: false } }).toEqual(a);
    expect(a).toMatchObject({ success: true, data: { ipAddress: "203.0.113.50", reputationScore: 51, riskLevel: "MEDIUM", totalReports: 1 } });
    expect(headerView(first)).toMatchObject({ type: "application/json;charset=utf-8", limit: "1000", auth: null });
    const remaining = [first, second].map((r) => Number(r.headers.get("x-ratelimit-remaining")));
    expect(remaining[1]).toBe(remaining[0] - 1);
  });

  test.each([
    ["no credential", "/v1/ip/8.8.8.8/reputation", {}, 401, "unauthorized"],
    ["a bad key", "/v1/ip/8.8.8.8/reputation", { "x-api-key": "aik_nope" }, 401, "unauthorized"],
    ["a bad address", "/v1/ip/010.0.0.1/reputation", null, 400, "bad_request"],
    ["an undecodable path", "/v1/ip/%E0%A4%A/reputation", null, 400, "bad_request"],
    ["a percent-encoded IPv6 address", "/v1/ip/2001%3Adb8%3A%3A1/reputation", null, 200, null],
  ] as const)("%s: the contract's status and error body", async (_what, path, headers, status, code) => {
    const sent = headers ?? counted.apiKey;
    const fast = await overHttp(path, sent);
    expect(fast.status).toBe(status);
    const body = (await fast.json()) as { success: boolean; code?: string; error?: string };
    if (code !== null) expect(body).toMatchObject({ success: false, code });
    else expect(body.success).toBe(true);
    expect(headerView(fast).auth).toBe(status === 401 ? "Bearer" : null);
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
