// Property-based tests over every documented route (issue 18), through the listener production serves with (so the
// fast routes, /api/v2 and the bouncer routes are covered): random and mutated path parameters, query strings,
// headers and bodies, with no credential, a key, a user's token, an admin's token or garbage. Whatever comes in:
// never a 500, the error body of the route's API (contract section 1 for /v1), no echo of a secret, and nothing
// stored by a refused request. New routes are covered as soon as the OpenAPI document lists them.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import fc from "fast-check";
import { STATUS_OF_CODE } from "../../src/domain/errors";
import { buildOpenApiDocument } from "../../src/http/openapi";
import { listen } from "../../src/http/server";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

const RUNS_PER_ROUTE = Number(process.env.HOSTILE_RUNS ?? 30);
const JWT_SECRET = "test-secret-test-secret-test-secret-0123";

let h: Harness;
let server: Server<undefined>;
let user: TestUser;
let admin: TestUser;

beforeAll(async () => {
  h = await createHarness();
  user = await addUser(h, { tier: "enterprise" });
  admin = await addUser(h, { role: "admin", tier: "enterprise" });
  server = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0 });
  // Something to find: a report, an allowlisted network, a feed.
  await h.call("POST", "/v1/ip/report", { headers: user.jwt, json: { ip: "198.51.100.9", category: "SSH", severity: 4 } });
  h.services.feeds.importText("seed", "203.0.113.0/24\n", { category: "HACKING", severity: 4, replace: false });
});
afterAll(async () => {
  server.stop(true);
  await h.close();
});

/** Rows per table: what a refused request must leave as it was (counters of requests and failed logins aside). */
const COUNTED = ["users", "api_keys", "reports", "report_transitions", "credit_ledger", "allowlist", "webhooks", "outbox", "feeds", "feed_entries", "bouncers", "threats"];
const counts = () => COUNTED.map((t) => h.store.sqlite.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${t}`).get()!.n).join(",");

const operations = Object.entries(buildOpenApiDocument().paths).flatMap(([path, ops]) =>
  Object.keys(ops)
    .filter((m) => m !== "head")
    .map((method) => ({ path, method: method.toUpperCase() })),
);

const weirdText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom("", " ", "%", "%00", "%E0%A4%A", "../../etc/passwd", "1.2.3.4", "::1", "203.0.113.0/24", "fe80::1%eth0", "999.1.1.1", "-1", "0", "1e309", "NaN", "null", "true", "[]", "{}", "'; DROP TABLE reports; --", "a".repeat(5000)),
);
const pathValue = weirdText.map((s) => encodeURIComponent(s).slice(0, 3000));
const credential = fc.constantFrom<"none" | "key" | "user" | "admin" | "garbage" | "lapi" | "abuseipdb">("none", "key", "user", "admin", "garbage", "lapi", "abuseipdb");
const contentType = fc.constantFrom(undefined, "application/json", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "application/json; charset=latin1");
const body = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.dictionary(fc.constantFrom("ip", "ipAddress", "ips", "category", "categories", "severity", "description", "email", "password", "name", "url", "events", "secret", "cidr", "note", "tier", "role", "status", "disabled", "dailyLimit", "file", "schedule", "comment", "csv"), fc.jsonValue({ maxDepth: 2 })).map((o) => JSON.stringify(o)),
  weirdText,
  fc.uint8Array({ maxLength: 200 }).map((b) => new TextDecoder("latin1").decode(b)),
);
const query = fc.array(fc.tuple(fc.constantFrom("limit", "offset", "format", "riskLevel", "category", "ipVersion", "ip", "range", "ipAddress", "maxAgeInDays", "verbose", "startup", "scopes", "page", "perPage", "confidenceMinimum", "network", "replace", "severity", "key", "x"), weirdText), { maxLength: 4 });

function headersFor(kind: string, type: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (type !== undefined) headers["content-type"] = type;
  switch (kind) {
    case "key":
      headers["x-api-key"] = user.key;
      break;
    case "user":
      headers.authorization = user.jwt.authorization;
      break;
    case "admin":
      headers.authorization = admin.jwt.authorization;
      break;
    case "garbage":
      headers.authorization = "Bearer eyJhbGciOiJub25lIn0.e30.";
      headers["x-api-key"] = "aik_<script>not-a-key";
      break;
    case "lapi":
      headers["X-Api-Key"] = user.key;
      break;
    case "abuseipdb":
      headers.Key = user.key;
      break;
  }
  return headers;
}

const SECRETS = () => [JWT_SECRET, user.key, admin.key, "correct horse battery staple"];
const KNOWN_CODES = new Set(Object.keys(STATUS_OF_CODE));

describe("hostile input on every documented route", () => {
  test("the document lists the routes this test walks", () => {
    expect(operations.length).toBeGreaterThan(40);
  });

  for (const { path, method } of operations) {
    test(`${method} ${path}`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(pathValue, { minLength: 3, maxLength: 3 }), query, credential, contentType, body, async (params, pairs, kind, type, text) => {
          let i = 0;
          const filled = path.replace(/\{[^}]+\}/g, () => params[i++ % params.length] || "x");
          const search = new URLSearchParams(pairs).toString();
          const before = counts();
          const res = await fetch(`http://127.0.0.1:${server.port}${filled}${search ? `?${search}` : ""}`, {
            method,
            headers: headersFor(kind, type),
            body: method === "GET" || method === "HEAD" ? undefined : text,
          });
          const raw = await res.text();
          const where = `${method} ${filled}?${search} [${kind}, ${type}] -> ${res.status}: ${raw.slice(0, 300)}`;
          expect(res.status, where).toBeLessThan(500);
          for (const secret of SECRETS()) expect(raw.includes(secret), `${where} echoes a secret`).toBe(false);
          if (res.status >= 400) {
            expect(counts(), `${where} stored something`).toBe(before);
            const error = JSON.parse(raw) as Record<string, unknown>;
            if (path.startsWith("/api/v2/")) {
              expect(Array.isArray(error.errors), where).toBe(true);
            } else if (["/v1/decisions/stream", "/v1/decisions", "/v1/usage-metrics"].includes(path)) {
              expect(typeof error.message, where).toBe("string");
            } else {
              expect(error.success, where).toBe(false);
              expect(typeof error.error, where).toBe("string");
              expect(KNOWN_CODES.has(error.code as string), where).toBe(true);
            }
          }
        }),
        { numRuns: RUNS_PER_ROUTE, seed: Number(process.env.HOSTILE_SEED ?? 20261124) },
      );
    }, 60_000);
  }
});

describe("hostile input on the console's forms", () => {
  const POSTS = ["/login", "/logout", "/console/report", "/console/keys", "/console/keys/revoke", "/console/admin/users", "/console/admin/users/change", "/console/admin/allowlist", "/console/admin/allowlist/remove", "/console/admin/feeds/refresh", "/console/admin/feeds/remove", "/console/admin/jobs/run"];
  let cookie = "";
  let csrf = "";
  beforeAll(async () => {
    const res = await fetch(`${h.url}/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ email: admin.user.email, password: "correct horse battery staple" }),
    });
    cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
    const page = await (await fetch(`${h.url}/console/keys`, { headers: { cookie } })).text();
    csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
    expect(cookie).toStartWith("abuse_intel_session=");
    expect(csrf.length).toBeGreaterThan(10);
  });

  const field = fc.constantFrom("ipAddress", "category", "severity", "description", "name", "id", "email", "password", "tier", "role", "dailyLimit", "disabled", "cidr", "note", "csrf", "x");
  for (const path of POSTS.filter((p) => p !== "/logout")) {
    test(`POST ${path}`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(field, weirdText), { maxLength: 6 }), fc.boolean(), fc.boolean(), contentType, async (pairs, signedIn, withCsrf, type) => {
          const form = new URLSearchParams(pairs);
          if (withCsrf) form.set("csrf", csrf);
          const before = counts();
          const headers: Record<string, string> = { "content-type": type ?? "application/x-www-form-urlencoded" };
          if (signedIn) headers.cookie = cookie;
          const res = await fetch(`${h.url}${path}`, { method: "POST", redirect: "manual", headers, body: form.toString() });
          const raw = await res.text();
          const where = `POST ${path} ${form} [${signedIn ? "session" : "none"}, ${type}] -> ${res.status}: ${raw.slice(0, 200)}`;
          expect(res.status, where).toBeLessThan(500);
          if (res.status !== 303) expect(res.headers.get("content-type"), where).toStartWith("text/html");
          expect(raw.includes("correct horse battery staple"), where).toBe(false);
          expect(raw.includes("    at "), where).toBe(false);
          if (res.status >= 400) expect(counts(), `${where} stored something`).toBe(before);
        }),
        { numRuns: RUNS_PER_ROUTE, seed: Number(process.env.HOSTILE_SEED ?? 20261124) },
      );
    }, 60_000);
  }
});
