// `serve --snapshot FILE` through the listener production serves with: the read-only composition answers lookups, bulk, recent, threats and
// blocklists exactly as the live server does for the same data; every write is 503 read_only; only the static
// API keys get in.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../src/config";
import type { Server } from "bun";
import { createApp } from "../../src/http/app";
import { listen } from "../../src/http/server";
import { createSnapshotServices, type SnapshotServices } from "../../src/app/snapshot-services";
import { exportSnapshot } from "../../src/services/snapshots/export";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { turnsTaken } from "../support/event-loop-watch";

const STATIC_KEY = "static-key-for-the-edge-box-0123456789";
const OTHER_STATIC_KEY = "second-static-key-abcdefghijklmnop";

let h: Harness;
let reporters: TestUser[];
let admin: TestUser;
let dir: string;
let snap: SnapshotServices;
let server: Server<undefined>;

const snapCall = (method: string, path: string, init: { headers?: Record<string, string>; json?: unknown } = {}) => {
  const headers: Record<string, string> = { ...init.headers };
  if (init.json !== undefined) headers["content-type"] = "application/json";
  return fetch(`http://127.0.0.1:${server.port}${path}`, { method, headers, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
};
const KEY = { "x-api-key": STATIC_KEY };

const addresses = ["203.0.113.7", "203.0.113.8", "198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4", "198.51.100.5", "8.8.4.4", "2001:db8::42", "2a00:1450::1"];

beforeAll(async () => {
  h = await createHarness();
  reporters = [];
  for (let i = 0; i < 3; i++) reporters.push(await addUser(h, { tier: "enterprise" }));
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
  for (const [i, ip] of addresses.entries()) {
    for (const r of reporters.slice(0, 1 + (i % 3))) {
      const res = await h.call("POST", "/v1/ip/report", { headers: r.jwt, json: { ip, category: ["ssh", "spam", "port-scan"][i % 3], severity: 2 + (i % 4) } });
      expect(res.status).toBe(201);
    }
    h.clock.advance(30_000);
  }
  await h.services.threats.detect(h.clock.now());
  h.services.allowlist.add("8.8.4.0/24", "resolver", admin.user.id);
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-snapserve-"));
  const file = join(dir, "s.sqlite");
  await exportSnapshot({ store: h.store, services: h.services, out: file, nowMs: h.clock.now() });
  snap = await createSnapshotServices({ config: { ...defaultConfig(), dataDir: dir, snapshot: file, apiKeys: [STATIC_KEY, OTHER_STATIC_KEY] }, clock: h.clock });
  server = listen(snap, createApp(snap), { hostname: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  server?.stop(true);
  await snap.stop();
  snap.store.close();
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("reads equal the live server's", () => {
  const paths = [
    ...addresses.map((ip) => `/v1/ip/${ip}`),
    "/v1/ip/8.8.8.8",
    "/v1/ip/10.0.0.1",
    "/v1/ip/2001:db8::1",
    ...addresses.map((ip) => `/v1/ip/${ip}/reputation`),
    "/v1/ip/recent",
    "/v1/ip/recent?limit=3&offset=2",
    "/v1/ip/recent?limit=0",
    "/v1/ip/not-an-ip",
    "/v1/threats",
    "/v1/categories",
    "/v1/scoring",
    "/v1/ip/blocklist",
    "/v1/ip/blocklist?riskLevel=LOW",
    "/v1/ip/blocklist?riskLevel=HIGH&format=txt",
    "/v1/ip/blocklist?format=cidr&riskLevel=low",
    "/v1/ip/blocklist?format=nft&riskLevel=low",
    "/v1/ip/blocklist?format=ipset&ipVersion=4&riskLevel=low",
    "/v1/ip/blocklist?format=csv&category=ssh,spam&riskLevel=low",
    "/v1/ip/blocklist?format=txt&ipVersion=6&riskLevel=low",
    "/v1/ip/blocklist?riskLevel=nonsense",
  ];
  test.each(paths)("GET %s", async (path) => {
    const live = await h.call("GET", path, { headers: reporters[0].apiKey });
    const offline = await snapCall("GET", path, { headers: KEY });
    expect(offline.status).toBe(live.status);
    expect(offline.headers.get("content-type")).toBe(live.headers.get("content-type"));
    const [a, b] = [await offline.text(), await live.text()];
    expect(a).toBe(b);
    if (path.includes("blocklist") && live.status === 200) expect(b.length).toBeGreaterThan(0);
  });

  test("walking the recent list by its cursor gives the same pages as the live server, and the same as by offset", async () => {
    let cursor: string | null = null;
    const walked: unknown[] = [];
    for (let page = 0; page < 10; page++) {
      const path: string = `/v1/ip/recent?limit=2${cursor === null ? "" : `&cursor=${cursor}`}`;
      const live = await h.call("GET", path, { headers: reporters[0].apiKey });
      const offline = await snapCall("GET", path, { headers: KEY });
      const text = await live.text();
      expect(await offline.text()).toBe(text);
      const body = JSON.parse(text) as { data: unknown[]; pagination: { next: string | null } };
      walked.push(...body.data);
      cursor = body.pagination.next;
      if (cursor === null) break;
    }
    const all = JSON.parse(await (await h.call("GET", "/v1/ip/recent?limit=100", { headers: reporters[0].apiKey })).text()) as { data: unknown[] };
    expect(walked).toEqual(all.data);
  });

  test("the reputation record's cached flag works the same: false, then true", async () => {
    const path = "/v1/ip/192.0.2.200/reputation";
    const first = await bodyOf(await snapCall("GET", path, { headers: KEY }));
    const second = await bodyOf(await snapCall("GET", path, { headers: KEY }));
    expect([first.data.cached, second.data.cached]).toEqual([false, true]);
  });

  test("POST /v1/ip/bulk reads and is allowed", async () => {
    const json = { ips: [...addresses, "nope", "8.8.8.8"] };
    const live = await bodyOf(await h.call("POST", "/v1/ip/bulk", { headers: reporters[0].apiKey, json }));
    const offline = await bodyOf(await snapCall("POST", "/v1/ip/bulk", { headers: KEY, json }));
    const uncached = (b: { data: { results: { cached: boolean }[] } }) => b.data.results.map((r) => ({ ...r, cached: false }));
    expect(uncached(offline)).toEqual(uncached(live));
    expect(offline.data.invalid).toEqual(live.data.invalid);
    expect(offline.data.results.length).toBe(addresses.length + 1);
  });

  test("blocklist ETags hold: If-None-Match with the current tag gives 304", async () => {
    const first = await snapCall("GET", "/v1/ip/blocklist?format=txt&riskLevel=low", { headers: KEY });
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    const again = await snapCall("GET", "/v1/ip/blocklist?format=txt&riskLevel=low", { headers: { ...KEY, "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  test("health and readiness answer", async () => {
    expect((await snapCall("GET", "/healthz")).status).toBe(200);
    expect(await bodyOf(await snapCall("GET", "/readyz"))).toMatchObject({ success: true, status: "ready" });
  });
});

describe("writes are refused with 503 read_only", () => {
  const writes: [string, string, unknown][] = [
    ["POST", "/v1/ip/report", { ip: "192.0.2.1", category: "spam" }],
    ["POST", "/v1/auth/login", { email: "a@b.c", password: "x" }],
    ["POST", "/v1/keys", { name: "k" }],
    ["DELETE", "/v1/keys/1", undefined],
    ["POST", "/v1/webhooks", { url: "http://127.0.0.1:9/", events: ["ping"] }],
    ["PATCH", "/v1/webhooks/1", { active: false }],
    ["POST", "/v1/admin/users", { email: "x@y.z", password: "pw-long-enough", tier: "free" }],
    ["PATCH", "/v1/admin/users/1", { tier: "pro" }],
    ["POST", "/v1/admin/allowlist", { cidr: "192.0.2.0/24" }],
    ["DELETE", "/v1/admin/allowlist?cidr=8.8.4.0/24", undefined],
    ["PATCH", "/v1/admin/reports/1", { status: "verified" }],
    ["POST", "/v1/admin/jobs/rescore/run", undefined],
    ["PUT", "/v1/anything", { a: 1 }],
  ];
  test("/api/v2 reports: 503 in AbuseIPDB's error shape", async () => {
    for (const headers of [{ Key: STATIC_KEY }, {}] as Record<string, string>[]) {
      const res = await snapCall("POST", "/api/v2/report", { headers, json: { ip: "192.0.2.1", categories: "18" } });
      expect(res.status).toBe(503);
      expect(await bodyOf(res)).toEqual({ errors: [{ detail: "This server answers read-only from a snapshot: reports are not taken here.", status: 503 }] });
    }
  });

  test.each(writes)("%s %s", async (method, path, json) => {
    // With a valid key and without one: the refusal comes before authentication.
    for (const headers of [KEY, {}]) {
      const res = await snapCall(method, path, { headers, json });
      expect(res.status).toBe(503);
      expect(await bodyOf(res)).toMatchObject({ success: false, code: "read_only" });
    }
  });

  test("nothing changed: the address reported above is still unknown, the allowlist the same", async () => {
    expect((await bodyOf(await snapCall("GET", "/v1/ip/192.0.2.1", { headers: KEY }))).reports).toBe(0);
    expect((await bodyOf(await snapCall("GET", "/v1/ip/8.8.4.4", { headers: KEY }))).isAllowlisted).toBe(true);
  });
});

describe("only the static API keys get in", () => {
  test.each([
    ["X-API-Key, first key", { "x-api-key": STATIC_KEY }, 200],
    ["X-API-Key, second key", { "x-api-key": OTHER_STATIC_KEY }, 200],
    ["Bearer key", { authorization: `Bearer ${STATIC_KEY}` }, 200],
    ["no credential", {}, 401],
    ["another key", { "x-api-key": "static-key-for-the-edge-box-0123456788" }, 401],
  ])("%s → %d", async (_name, headers, status) => {
    const res = await snapCall("GET", "/v1/ip/203.0.113.7", { headers: headers as Record<string, string> });
    expect(res.status).toBe(status);
    if (status === 401) expect((await bodyOf(res)).code).toBe("unauthorized");
  });

  test("the live server's keys and tokens mean nothing here", async () => {
    for (const headers of [reporters[0].apiKey, reporters[0].jwt, admin.jwt]) {
      expect((await snapCall("GET", "/v1/ip/203.0.113.7", { headers })).status).toBe(401);
    }
  });

  test("static keys are unlimited (no rate-limit headers) and cannot reach user endpoints", async () => {
    const res = await snapCall("GET", "/v1/ip/203.0.113.7", { headers: KEY });
    expect(res.headers.get("x-ratelimit-limit")).toBeNull();
    for (const path of ["/v1/keys", "/v1/credits/balance", "/v1/webhooks", "/v1/admin/users", "/v1/admin/jobs"]) {
      const denied = await snapCall("GET", path, { headers: KEY });
      expect(denied.status).toBe(401);
    }
  });

  test("a snapshot server with no API key refuses to start", async () => {
    await expect(createSnapshotServices({ config: { ...defaultConfig(), snapshot: snap.snapshot.info.file, apiKeys: [] } })).rejects.toThrow(/needs at least one API key/);
  });

  test("opening a snapshot (an edge's swap, beside the one it serves) gives the event loop turns between its pieces (issue 29)", async () => {
    const { value: next, turns } = await turnsTaken(() => createSnapshotServices({ config: { ...defaultConfig(), snapshot: snap.snapshot.info.file, apiKeys: [STATIC_KEY] }, clock: h.clock }));
    try {
      expect(turns).toBeGreaterThanOrEqual(2);
      expect(next.index.v4.size).toBe(snap.index.v4.size);
    } finally {
      await next.stop();
      next.store.close();
    }
  });
});
