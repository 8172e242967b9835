import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { type Receiver, startReceiver } from "../support/webhook-receiver";

/** One sample of the text format: `name{labels} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Exposition {
  types: Map<string, string>;
  helps: Map<string, string>;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;

/** A strict reader of the Prometheus text format (0.0.4): throws on anything a Prometheus server would refuse. */
function parseExposition(text: string): Exposition {
  expect(text.endsWith("\n")).toBe(true);
  const types = new Map<string, string>();
  const helps = new Map<string, string>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  for (const line of text.slice(0, -1).split("\n")) {
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      expect(name).toMatch(NAME);
      const map = kind === "HELP" ? helps : types;
      if (map.has(name)) throw new Error(`second ${kind} for ${name}`);
      if (kind === "TYPE") {
        expect(["counter", "gauge", "histogram", "summary", "untyped"]).toContain(rest);
        if (samples.some((s) => familyOf(s.name, types) === name)) throw new Error(`TYPE of ${name} after its samples`);
      }
      map.set(name, rest);
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    if (m[2] !== undefined) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < m[2].length) {
        const l = LABEL.exec(m[2]);
        if (!l) throw new Error(`bad labels in ${JSON.stringify(line)}`);
        labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
      }
    }
    const value = m[3] === "+Inf" ? Infinity : m[3] === "-Inf" ? -Infinity : Number(m[3]);
    if (m[3] !== "NaN" && Number.isNaN(value)) throw new Error(`bad value in ${JSON.stringify(line)}`);
    const key = `${m[1]}${JSON.stringify(labels)}`;
    if (seen.has(key)) throw new Error(`duplicate series ${key}`);
    seen.add(key);
    samples.push({ name: m[1], labels, value });
  }
  for (const s of samples) {
    const family = familyOf(s.name, types);
    if (!types.has(family) || !helps.has(family)) throw new Error(`${s.name} has no # HELP and # TYPE`);
  }
  return { types, helps, samples };
}

/** The family a sample belongs to: histograms' samples carry _bucket, _sum and _count suffixes. */
function familyOf(name: string, types: Map<string, string>): string {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && types.get(base) === "histogram") return base;
  }
  return name;
}

/** The value of one series, 0 when it is absent (a counter that has not moved yet). */
function valueOf(e: Exposition, name: string, labels: Record<string, string> = {}): number {
  const match = e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (match.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${match.length} series`);
  return match[0]?.value ?? 0;
}

let h: Harness;
let reader: TestUser;
let reporter: TestUser;
let admin: TestUser;
let receiver: Receiver;

const scrape = async (headers: Record<string, string> = {}) => {
  const res = await h.call("GET", "/metrics", { headers });
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
};
const lookup = (ip: string, who: TestUser = reader) => h.call("GET", `/v1/ip/${ip}/reputation`, { headers: who.apiKey });
const REPUTATION = { method: "GET", route: "/v1/ip/:ip/reputation" };

beforeAll(async () => {
  h = await createHarness();
  reader = await addUser(h, { tier: "enterprise" });
  reporter = await addUser(h, { tier: "enterprise" });
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
  receiver = startReceiver();
});
afterAll(async () => {
  await receiver.stop();
  await h.close();
});

describe("GET /metrics (section 11)", () => {
  test("Prometheus text format: content type, HELP and TYPE for every family, no duplicate series", async () => {
    await lookup("8.8.8.8");
    const res = await h.call("GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const e = parseExposition(await res.text());
    for (const [family, type] of [
      ["abuse_intel_http_requests_total", "counter"],
      ["abuse_intel_http_request_duration_seconds", "histogram"],
      ["abuse_intel_rate_limited_total", "counter"],
      ["abuse_intel_reports_accepted_total", "counter"],
      ["abuse_intel_webhook_deliveries", "gauge"],
      ["abuse_intel_index_addresses", "gauge"],
      ["abuse_intel_index_generation", "gauge"],
      ["abuse_intel_job_last_run_failed", "gauge"],
      ["process_resident_memory_bytes", "gauge"],
      ["abuse_intel_uptime_seconds", "gauge"],
    ]) {
      expect([family, e.types.get(family)]).toEqual([family, type]);
    }
    expect(valueOf(e, "process_resident_memory_bytes")).toBeGreaterThan(0);
  });

  test("requests are counted by method, route template and status class, with durations", async () => {
    const before = await scrape();
    for (const ip of ["1.1.1.1", "9.9.9.9", "2001:db8::1"]) expect((await lookup(ip)).status).toBe(200);
    expect((await lookup("010.0.0.1")).status).toBe(400);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta("abuse_intel_http_requests_total", { ...REPUTATION, status: "2xx" })).toBe(3);
    expect(delta("abuse_intel_http_requests_total", { ...REPUTATION, status: "4xx" })).toBe(1);
    expect(delta("abuse_intel_http_request_duration_seconds_count", REPUTATION)).toBe(4);
    expect(delta("abuse_intel_http_request_duration_seconds_bucket", { ...REPUTATION, le: "+Inf" })).toBe(4);
    expect(delta("abuse_intel_http_request_duration_seconds_sum", REPUTATION)).toBeGreaterThan(0);
    expect(delta("abuse_intel_http_errors_total", { code: "bad_request" })).toBe(1);
    // Buckets are cumulative: never fewer in a higher one.
    const buckets = after.samples.filter((s) => s.name === "abuse_intel_http_request_duration_seconds_bucket" && s.labels.route === REPUTATION.route);
    expect(buckets.map((b) => b.value)).toEqual([...buckets.map((b) => b.value)].sort((a, b) => a - b));
    // The scrape itself was counted by the time of the next one.
    expect(valueOf(after, "abuse_intel_http_requests_total", { method: "GET", route: "/metrics", status: "2xx" })).toBeGreaterThan(0);
  });

  test("paths that match no route share one series, whatever they are", async () => {
    const before = await scrape();
    for (const path of ["/wp-login.php", "/.env", "/v2/anything"]) expect((await h.call("GET", path)).status).toBe(404);
    const after = await scrape();
    const labels = { method: "GET", route: "(unmatched)", status: "4xx" };
    expect(valueOf(after, "abuse_intel_http_requests_total", labels) - valueOf(before, "abuse_intel_http_requests_total", labels)).toBe(3);
    expect(after.samples.some((s) => s.labels.route === "/wp-login.php")).toBe(false);
    expect(valueOf(after, "abuse_intel_http_errors_total", { code: "not_found" }) - valueOf(before, "abuse_intel_http_errors_total", { code: "not_found" })).toBe(3);
  });

  test("rate-limited responses are counted; /metrics itself never counts against a budget", async () => {
    const limited = await addUser(h, { tier: "free", dailyLimit: 2 });
    // Scrapes carrying the user's key do not spend any of its two requests.
    for (let i = 0; i < 3; i++) {
      const res = await h.call("GET", "/metrics", { headers: limited.apiKey });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-remaining")).toBeNull();
    }
    const before = await scrape();
    expect((await lookup("8.8.4.4", limited)).status).toBe(200);
    expect((await lookup("8.8.4.4", limited)).status).toBe(200);
    expect((await lookup("8.8.4.4", limited)).status).toBe(429);
    const after = await scrape();
    expect(valueOf(after, "abuse_intel_rate_limited_total") - valueOf(before, "abuse_intel_rate_limited_total")).toBe(1);
    expect(valueOf(after, "abuse_intel_http_requests_total", { ...REPUTATION, status: "4xx" }) - valueOf(before, "abuse_intel_http_requests_total", { ...REPUTATION, status: "4xx" })).toBe(1);
  });

  test("an accepted report moves the reports counter, the index size and its generation", async () => {
    const before = await scrape();
    const res = await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ip: "198.51.100.77", category: "ssh", severity: 4 } });
    expect(res.status).toBe(201);
    const v6 = await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ip: "2001:db8::77", category: "ssh" } });
    expect(v6.status).toBe(201);
    const after = await scrape();
    expect(valueOf(after, "abuse_intel_reports_accepted_total") - valueOf(before, "abuse_intel_reports_accepted_total")).toBe(2);
    expect(valueOf(after, "abuse_intel_index_addresses", { family: "ipv4" }) - valueOf(before, "abuse_intel_index_addresses", { family: "ipv4" })).toBe(1);
    expect(valueOf(after, "abuse_intel_index_addresses", { family: "ipv6" }) - valueOf(before, "abuse_intel_index_addresses", { family: "ipv6" })).toBe(1);
    expect(valueOf(after, "abuse_intel_index_generation")).toBeGreaterThan(valueOf(before, "abuse_intel_index_generation"));
    expect(valueOf(after, "abuse_intel_http_requests_total", { method: "POST", route: "/v1/ip/report", status: "2xx" })).toBe(2);
  });

  test("webhook deliveries by outcome and attempts, read from the store", async () => {
    const before = await scrape();
    const created = await h.call("POST", "/v1/webhooks", { headers: reporter.jwt, json: { url: receiver.url, events: ["ping"] } });
    expect(created.status).toBe(201);
    const id = (await bodyOf(created)).data.id;
    expect((await h.call("POST", `/v1/webhooks/${id}/ping`, { headers: reporter.jwt })).status).toBe(202);
    const queued = await scrape();
    expect(valueOf(queued, "abuse_intel_webhook_outbox_waiting") - valueOf(before, "abuse_intel_webhook_outbox_waiting")).toBe(1);
    await h.services.webhookDispatcher.tick();
    const after = await scrape();
    const delta = (name: string, labels?: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta("abuse_intel_webhook_deliveries", { status: "delivered" })).toBe(1);
    expect(delta("abuse_intel_webhook_deliveries", { status: "pending" })).toBe(0);
    expect(delta("abuse_intel_webhook_attempts_total")).toBe(1);
    expect(valueOf(after, "abuse_intel_webhook_outbox_waiting")).toBe(0);
  });

  test("scheduled jobs: last run time, duration and failure flag", async () => {
    const before = await scrape();
    expect(before.samples.some((s) => s.name === "abuse_intel_job_last_run_timestamp_seconds" && s.labels.job === "verify")).toBe(false);
    expect((await h.call("POST", "/v1/admin/jobs/verify/run", { headers: admin.jwt })).status).toBe(200);
    const after = await scrape();
    expect(valueOf(after, "abuse_intel_job_last_run_timestamp_seconds", { job: "verify" })).toBe(h.clock.now() / 1000);
    expect(valueOf(after, "abuse_intel_job_last_run_failed", { job: "verify" })).toBe(0);
    expect(valueOf(after, "abuse_intel_job_running", { job: "verify" })).toBe(0);
  });

  test("uptime follows the instance's clock", async () => {
    const before = valueOf(await scrape(), "abuse_intel_uptime_seconds");
    h.clock.advance(90_000);
    expect(valueOf(await scrape(), "abuse_intel_uptime_seconds") - before).toBe(90);
  });

  test("the event loop held by a request's worth of synchronous work shows in the lag gauge and its histogram (issue 29)", async () => {
    const before = await scrape();
    await Bun.sleep(30); // the watch's timer has ticked since, so the next gap spans the whole hold
    const until = performance.now() + 60;
    while (performance.now() < until) {
      // holding the event loop as a long background step would
    }
    await Bun.sleep(30);
    const after = await scrape();
    expect(after.types.get("abuse_intel_event_loop_lag_seconds")).toBe("gauge");
    expect(after.types.get("abuse_intel_event_loop_delay_seconds")).toBe("histogram");
    // The tick due during the hold came at least 60 ms after the one before it: at least 55 ms late.
    expect(valueOf(after, "abuse_intel_event_loop_lag_seconds")).toBeGreaterThanOrEqual(0.055);
    const atLeast50ms = (e: typeof after) => valueOf(e, "abuse_intel_event_loop_delay_seconds_count") - valueOf(e, "abuse_intel_event_loop_delay_seconds_bucket", { le: "0.05" });
    expect(atLeast50ms(after) - atLeast50ms(before)).toBeGreaterThanOrEqual(1);
    expect(valueOf(after, "abuse_intel_event_loop_delay_seconds_count")).toBeGreaterThan(valueOf(before, "abuse_intel_event_loop_delay_seconds_count"));
  });
});

describe("GET /metrics with --metrics-token", () => {
  const TOKEN = "metrics-s3cret-token-0123456789";
  let guarded: Harness;
  beforeAll(async () => {
    guarded = await createHarness({ metricsToken: TOKEN });
  });
  afterAll(() => guarded.close());

  test.each([
    ["no credential", {}],
    ["a wrong token", { authorization: `Bearer ${TOKEN}x` }],
    ["a prefix of the token", { authorization: `Bearer ${TOKEN.slice(0, 10)}` }],
    ["the token without Bearer", { authorization: TOKEN }],
    ["the token as X-API-Key", { "x-api-key": TOKEN }],
  ])("%s: 401 with the contract's error body", async (_, headers: Record<string, string>) => {
    const res = await guarded.call("GET", "/metrics", { headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(await bodyOf(res)).toMatchObject({ success: false, code: "unauthorized" });
  });

  test("the right bearer token: 200 with the metrics", async () => {
    for (const scheme of ["Bearer", "bearer"]) {
      const res = await guarded.call("GET", "/metrics", { headers: { authorization: `${scheme} ${TOKEN}` } });
      expect(res.status).toBe(200);
      const e = parseExposition(await res.text());
      expect(valueOf(e, "abuse_intel_http_errors_total", { code: "unauthorized" })).toBeGreaterThanOrEqual(5);
    }
  });

  test("the token guards only /metrics: health checks stay open", async () => {
    expect((await guarded.call("GET", "/healthz")).status).toBe(200);
    expect((await guarded.call("GET", "/v1/openapi.json")).status).toBe(200);
  });
});
