import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FAST_ROUTES } from "../../src/http/fast-routes";
import { ABUSEIPDB_ENDPOINTS } from "../../src/http/abuseipdb/router";
import { CROWDSEC_ENDPOINTS } from "../../src/http/crowdsec/routes";
import { createHash } from "node:crypto";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let h: Harness;
let doc: Json;
let reader: TestUser;
let user: TestUser;
let admin: TestUser;

/** Elysia's `/v1/ip/:ip` as OpenAPI writes it: `/v1/ip/{ip}`. */
const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)\??/g, "{$1}");

/** Every route the app serves, as "METHOD /openapi/{path}". */
const served = () =>
  new Set([
    ...h.app.routes.map((r) => `${r.method.toUpperCase()} ${openApiPath(r.path)}`),
    // The hot routes are served only on Bun's router (fast-routes.ts).
    ...FAST_ROUTES.map(([method, path]) => `${method} ${openApiPath(path)}`),
    // /api/v2 is served ahead of the app, on Bun's router (test/http/abuseipdb.test.ts checks its credentials).
    ...Object.entries(ABUSEIPDB_ENDPOINTS).flatMap(([name, methods]) => methods.map((m) => `${m} /api/v2/${name}`)),
    // So are the CrowdSec bouncer routes (test/http/crowdsec.test.ts checks their credential).
    ...Object.entries(CROWDSEC_ENDPOINTS).flatMap(([path, methods]) => methods.map((m) => `${m} ${path}`)),
  ]);

const documented = () =>
  new Set(Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)));

/** Values for path parameters when a test calls a documented route. */
const SAMPLE_PARAMS: Record<string, string> = { ip: "8.8.8.8", id: "1", name: "verify" };
const fill = (path: string) => path.replace(/\{([^}]+)\}/g, (_, name: string) => SAMPLE_PARAMS[name] ?? "x");

beforeAll(async () => {
  h = await createHarness();
  reader = await addUser(h, { tier: "enterprise" });
  user = await addUser(h, { tier: "enterprise" });
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
  const res = await h.call("GET", "/v1/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  doc = JSON.parse(await res.text());
});
afterAll(() => h.close());

// ---- a small JSON Schema (2020-12) checker for the keywords the document uses ----

function resolveRef(ref: string): Json {
  expect(ref.startsWith("#/")).toBe(true);
  let node: Json = doc;
  for (const part of ref.slice(2).split("/")) node = node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")];
  if (node === undefined) throw new Error(`unresolved $ref ${ref}`);
  return node;
}

const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The problems of `value` against `schema`, each with its JSON path; empty when it matches. */
function problems(schema: Json, value: unknown, path = "$"): string[] {
  if (schema.$ref) return problems(resolveRef(schema.$ref), value, path);
  const out: string[] = [];
  if (schema.allOf) for (const s of schema.allOf) out.push(...problems(s, value, path));
  if (schema.anyOf && !schema.anyOf.some((s: Json) => problems(s, value, path).length === 0)) out.push(`${path}: matches none of anyOf`);
  if (schema.oneOf && schema.oneOf.filter((s: Json) => problems(s, value, path).length === 0).length !== 1) out.push(`${path}: does not match exactly one of oneOf`);
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) out.push(`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
  if (schema.enum && !schema.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))) out.push(`${path}: ${JSON.stringify(value)} not in enum`);
  if (schema.type) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual = typeOf(value);
    if (!types.includes(actual) && !(actual === "integer" && types.includes("number"))) return [...out, `${path}: ${actual} is not ${types.join("|")}`];
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) out.push(`${path}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) out.push(`${path}: above ${schema.maximum}`);
  }
  if (typeof value === "string") {
    if (schema.pattern && !new RegExp(schema.pattern, "u").test(value)) out.push(`${path}: does not match ${schema.pattern}`);
    if (schema.format === "date-time" && !ISO_TIME.test(value)) out.push(`${path}: not an ISO time with milliseconds`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) out.push(`${path}: too long`);
  }
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((item, i) => out.push(...problems(schema.items, item, `${path}[${i}]`)));
    if (schema.minItems !== undefined && value.length < schema.minItems) out.push(`${path}: fewer than ${schema.minItems} items`);
  }
  if (typeOf(value) === "object") {
    const o = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!(key in o)) out.push(`${path}: missing ${key}`);
    for (const [key, s] of Object.entries(schema.properties ?? {})) if (key in o) out.push(...problems(s, o[key], `${path}.${key}`));
    if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
      for (const [key, v] of Object.entries(o)) if (!(key in (schema.properties ?? {}))) out.push(...problems(schema.additionalProperties, v, `${path}.${key}`));
    }
  }
  return out;
}

/** Calls a route and checks its JSON body against the documented response for the status it answered. */
async function conforms(method: string, template: string, init: { path?: string; headers?: Record<string, string>; json?: unknown } = {}): Promise<Json> {
  const res = await h.call(method, init.path ?? fill(template), { headers: init.headers, json: init.json });
  const operation = doc.paths[template]?.[method.toLowerCase()];
  expect(operation, `${method} ${template} is documented`).toBeDefined();
  let response = operation.responses[String(res.status)];
  expect(response, `${method} ${template} documents status ${res.status}`).toBeDefined();
  if (response.$ref) response = resolveRef(response.$ref);
  const body = await bodyOf(res);
  expect({ route: `${method} ${template} → ${res.status}`, problems: problems(response.content["application/json"].schema, body) }).toEqual({
    route: `${method} ${template} → ${res.status}`,
    problems: [],
  });
  return body;
}

describe("GET /v1/openapi.json (section 11)", () => {
  test("an OpenAPI 3.1 document with the three security schemes and the error body", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.title).toBe("abuse-intel");
    expect(doc.components.securitySchemes.ApiKey).toEqual(expect.objectContaining({ type: "apiKey", in: "header", name: "X-API-Key" }));
    expect(doc.components.securitySchemes.Bearer).toEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
    expect(doc.components.schemas.Error.required).toEqual(["success", "error", "code"]);
  });

  test("every route the app serves is documented", () => {
    const missing = [...served()].filter((route) => !documented().has(route));
    expect(missing, "add these routes to src/http/openapi.ts").toEqual([]);
  });

  test("every documented route is served", () => {
    const extra = [...documented()].filter((route) => !served().has(route));
    expect(extra).toEqual([]);
  });

  test("every $ref resolves", () => {
    const refs: string[] = [];
    const walk = (node: Json) => {
      if (node && typeof node === "object") {
        if (typeof node.$ref === "string") refs.push(node.$ref);
        for (const v of Object.values(node)) walk(v);
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(50);
    for (const ref of new Set(refs)) expect(() => resolveRef(ref)).not.toThrow();
  });

  test("operation ids are unique and every path parameter is declared", () => {
    const ids: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      for (const [method, op] of Object.entries(ops)) {
        ids.push(op.operationId);
        const declared = (op.parameters ?? []).map((p: Json) => (p.$ref ? resolveRef(p.$ref) : p)).filter((p: Json) => p.in === "path").map((p: Json) => p.name);
        const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        expect({ route: `${method} ${path}`, params: declared.sort() }).toEqual({ route: `${method} ${path}`, params: inPath.sort() });
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("the documented credential is the one each route asks for", async () => {
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const access: string = op["x-access"];
        const route = `${method.toUpperCase()} ${path}`;
        if (path.startsWith("/api/v2/") || path in CROWDSEC_ENDPOINTS) continue;
        const status = async (headers: Record<string, string>) => (await h.call(method.toUpperCase(), fill(path), { headers })).status;
        const anonymous = await status({});
        if (access === "public" || access === "metrics") {
          expect({ route, anonymous: anonymous !== 401 }).toEqual({ route, anonymous: true });
          expect(op.security.filter((s: Json) => Object.keys(s).length > 0).every((s: Json) => !("ApiKey" in s))).toBe(true);
          continue;
        }
        expect({ route, anonymous }).toEqual({ route, anonymous: 401 });
        const withKey = await status(reader.apiKey);
        if (access === "key") {
          expect({ route, withKey: withKey !== 401 }).toEqual({ route, withKey: true });
          expect(op.security).toEqual([{ ApiKey: [] }, { Bearer: [] }]);
        } else {
          expect({ route, withKey }).toEqual({ route, withKey: 401 });
          expect(op.security).toEqual([{ Bearer: [] }]);
          const withUser = await status(user.jwt);
          if (access === "admin") expect({ route, withUser }).toEqual({ route, withUser: 403 });
          else expect({ route, withUser: withUser !== 401 && withUser !== 403 }).toEqual({ route, withUser: true });
        }
      }
    }
  });

  test("real responses match their documented schemas", async () => {
    const R = reader.apiKey;
    const U = user.jwt;
    const A = admin.jwt;
    await conforms("GET", "/healthz");
    await conforms("GET", "/readyz");
    await conforms("POST", "/v1/auth/login", { json: { email: user.user.email, password: user.password } });
    await conforms("POST", "/v1/auth/login", { json: { email: user.user.email, password: "wrong password" } });
    await conforms("GET", "/v1/auth/whoami", { headers: R });
    const key = await conforms("POST", "/v1/keys", { headers: U, json: { name: "docs" } });
    await conforms("GET", "/v1/keys", { headers: U });
    await conforms("DELETE", "/v1/keys/{id}", { path: `/v1/keys/${key.data.id}`, headers: U });
    await conforms("POST", "/v1/ip/report", { headers: U, json: { ipAddress: "198.51.100.20", category: "ssh", description: "x", severity: 4 } });
    const reported = await conforms("POST", "/v1/ip/report", { headers: U, json: { ip: "2001:db8::20", category: "spam", severity: "high", evidence: "log" } });
    await conforms("POST", "/v1/ip/report", { headers: U, json: { ip: "2001:db8::20", category: "spam" } }); // 429 duplicate
    await conforms("POST", "/v1/ip/report", { headers: U, json: { ip: "not an address", category: "spam" } }); // 400
    await conforms("GET", "/v1/ip/{ip}", { path: "/v1/ip/198.51.100.20", headers: R });
    await conforms("GET", "/v1/ip/{ip}", { path: "/v1/ip/8.8.8.8", headers: R });
    await conforms("GET", "/v1/ip/{ip}/reputation", { path: "/v1/ip/2001:db8::20/reputation", headers: R });
    await conforms("GET", "/v1/ip/{ip}/reputation", { path: "/v1/ip/8.8.8.8/reputation" }); // 401
    await conforms("GET", "/v1/ip/recent", { headers: R });
    await conforms("GET", "/v1/ip/recent", { path: "/v1/ip/recent?limit=0", headers: R }); // 400
    await conforms("POST", "/v1/ip/bulk", { headers: R, json: { ips: ["198.51.100.20", "1.1.1.1", "nope"] } });
    await conforms("GET", "/v1/categories", { headers: R });
    await conforms("GET", "/v1/scoring", { headers: R });
    await conforms("GET", "/v1/ip/blocklist", { headers: R });
    await conforms("GET", "/v1/threats", { headers: R });
    await conforms("GET", "/v1/credits/balance", { headers: U });
    await conforms("GET", "/v1/credits/history", { headers: U });
    await conforms("GET", "/v1/admin/reports/{id}", { path: `/v1/admin/reports/${reported.reportId}`, headers: A });
    await conforms("PATCH", "/v1/admin/reports/{id}", { path: `/v1/admin/reports/${reported.reportId}`, headers: A, json: { status: "verified" } });
    await conforms("GET", "/v1/admin/reports/{id}", { path: "/v1/admin/reports/999999", headers: A }); // 404
    await conforms("GET", "/v1/admin/users", { headers: A });
    const created = await conforms("POST", "/v1/admin/users", { headers: A, json: { email: "docs@example.test", password: "long enough password", tier: "pro" } });
    await conforms("PATCH", "/v1/admin/users/{id}", { path: `/v1/admin/users/${created.data.id}`, headers: A, json: { disabled: true, dailyLimit: 5 } });
    await conforms("GET", "/v1/admin/users", { headers: U }); // 403
    await conforms("POST", "/v1/admin/allowlist", { headers: A, json: { cidr: "10.0.0.0/8", note: "lan" } });
    await conforms("GET", "/v1/admin/allowlist", { headers: A });
    await conforms("DELETE", "/v1/admin/allowlist", { headers: A, json: { cidr: "10.0.0.0/8" } });
    await conforms("DELETE", "/v1/admin/allowlist/{id}", { path: "/v1/admin/allowlist/192.0.2.0%2F24", headers: A }); // 404
    await conforms("GET", "/v1/admin/jobs", { headers: A });
    await conforms("POST", "/v1/admin/jobs/{name}/run", { path: "/v1/admin/jobs/verify/run", headers: A });
    const hook = await conforms("POST", "/v1/webhooks", { headers: U, json: { url: "http://127.0.0.1:9/hook", events: ["ping", "ip.reported"] } });
    const hookPath = `/v1/webhooks/${hook.data.id}`;
    await conforms("GET", "/v1/webhooks", { headers: U });
    await conforms("GET", "/v1/webhooks/{id}", { path: hookPath, headers: U });
    await conforms("POST", "/v1/webhooks/{id}/ping", { path: `${hookPath}/ping`, headers: U });
    await h.services.webhookDispatcher.tick(); // the receiver refuses the connection: a recorded failed attempt
    await conforms("GET", "/v1/webhooks/{id}/deliveries", { path: `${hookPath}/deliveries`, headers: U });
    await conforms("PATCH", "/v1/webhooks/{id}", { path: hookPath, headers: U, json: { active: false } });
    await conforms("DELETE", "/v1/webhooks/{id}", { path: hookPath, headers: U });
    await conforms("GET", "/v1/webhooks/{id}", { path: hookPath, headers: U }); // 404
  });
});

describe("GET /docs (section 11)", () => {
  let res: Response;
  let html: string;
  beforeAll(async () => {
    res = await h.call("GET", "/docs");
    html = await res.text();
  });

  test("an HTML page that loads the document from this server", () => {
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain('"v1/openapi.json"');
  });

  test("no external asset: every absolute URL is a link (<a href>), and only to DB-IP", () => {
    const urls = [...html.matchAll(/https?:\/\/[^\s"'<>)]+/gi)];
    expect(urls.map((m) => m[0])).toEqual(["https://db-ip.com"]);
    for (const m of urls) expect(html.slice(m.index! - 9, m.index)).toBe('<a href="');
    expect(html).not.toMatch(/<script[^>]*\ssrc=/i);
    expect(html).not.toMatch(/<img\s/i);
    expect(html).not.toMatch(/@import|url\(/i);
    for (const link of html.matchAll(/<link\b[^>]*>/gi)) expect(link[0]).toMatch(/href="data:/);
    expect(html).not.toMatch(/\/\/[a-z0-9.-]+\.(com|net|org|io|dev)\b(?!")/i);
  });

  test("carries the DB-IP attribution link its licence asks for", () => {
    expect(html).toContain('<a href="https://db-ip.com">IP Geolocation by DB-IP</a>');
  });

  test("its Content-Security-Policy allows exactly its own inline script and style, and connections to this server only", () => {
    const csp = res.headers.get("content-security-policy")!;
    const hashOf = (tag: string) => {
      const m = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(html);
      expect(m).not.toBeNull();
      return `'sha256-${createHash("sha256").update(m![1]).digest("base64")}'`;
    };
    expect(csp).toContain(`script-src ${hashOf("script")}`);
    expect(csp).toContain(`style-src ${hashOf("style")}`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
  });

  test("its script is valid JavaScript", () => {
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1];
    expect(() => new Function(script)).not.toThrow();
  });

  test("neither the page nor the document counts against a rate limit", async () => {
    const limited = await addUser(h, { tier: "free", dailyLimit: 1 });
    for (const path of ["/docs", "/v1/openapi.json", "/docs", "/v1/openapi.json"]) {
      const r = await h.call("GET", path, { headers: limited.apiKey });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-ratelimit-remaining")).toBeNull();
    }
    expect((await h.call("GET", "/v1/categories", { headers: limited.apiKey })).status).toBe(200);
  });
});
