// Options an operator sets that change how the server runs rather than what it answers: the SQLite durability
// mode (--sync) and the access log (--access-log).

import { afterEach, describe, expect, spyOn, test } from "bun:test";
import { addUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { writtenToStderr } from "../support/stderr";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("--sync", () => {
  test.each([
    ["full", 2],
    ["normal", 1],
  ] as const)("%s sets PRAGMA synchronous to %d", async (syncMode, level) => {
    h = await createHarness({ syncMode });
    expect(h.store.sqlite.query("PRAGMA synchronous").get()).toEqual({ synchronous: level });
  });
});

describe("--access-log", () => {
  test("one line per request on stderr with method, path, status and duration", async () => {
    h = await createHarness({ accessLog: true });
    const user = await addUser(h, { tier: "enterprise" });
    const written = await writtenToStderr(async () => {
      await h!.call("GET", "/v1/ip/8.8.8.8/reputation", { headers: user.apiKey });
      await h!.call("GET", "/v1/ip/not-an-ip/reputation", { headers: user.apiKey });
      await h!.call("GET", `/v1/ip/8.8.4.4?key=${user.key}&x=1`);
    });
    const lines = written.filter((l) => l.includes(" /v1/ip/"));
    expect(lines).toHaveLength(3);
    expect(lines[2]).toContain("/v1/ip/8.8.4.4?key=[redacted]&x=1 401");
    expect(written.join("")).not.toContain(user.key);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z GET \/v1\/ip\/8\.8\.8\.8\/reputation 200 \d+\.\dms\n$/);
    expect(lines[1]).toMatch(/ GET \/v1\/ip\/not-an-ip\/reputation 400 /);
  });

  test("off by default: nothing is written", async () => {
    h = await createHarness();
    const user = await addUser(h, { tier: "enterprise" });
    const spy = spyOn(process.stderr, "write");
    try {
      await h.call("GET", "/v1/ip/8.8.8.8/reputation", { headers: user.apiKey });
      expect(spy.mock.calls.filter((c) => String(c[0]).includes("/v1/ip/"))).toHaveLength(0);
    } finally {
      spy.mockRestore();
    }
  });

  test("ABUSE_INTEL_ACCESS_LOG=no is off (it read as on); a value neither yes nor no is refused at start", async () => {
    const { resolveConfig } = await import("../../src/config");
    expect(resolveConfig(new Map(), { ABUSE_INTEL_ACCESS_LOG: "no" }).accessLog).toBe(false);
    expect(resolveConfig(new Map(), { ABUSE_INTEL_ACCESS_LOG: "yes" }).accessLog).toBe(true);
    expect(() => resolveConfig(new Map(), { ABUSE_INTEL_ACCESS_LOG: "maybe" })).toThrow(/ABUSE_INTEL_ACCESS_LOG/);
  });
});

describe("--scoring", () => {
  test("overrides reach the scores and GET /v1/scoring", async () => {
    h = await createHarness({ scoring: { perReporterCap: 0.5, riskThresholds: { low: 90 } } });
    const user = await addUser(h, { tier: "enterprise" });
    const scoring = await (await h.call("GET", "/v1/scoring", { headers: user.apiKey })).json();
    expect((scoring as { data: Record<string, unknown> }).data).toMatchObject({ perReporterCap: 0.5, riskThresholds: { low: 90, medium: 50, high: 20 } });
    await h.call("POST", "/v1/ip/report", { headers: user.jwt, json: { ipAddress: "198.51.100.9", category: "SSH", description: "", severity: 5 } });
    const data = ((await (await h.call("GET", "/v1/ip/198.51.100.9/reputation", { headers: user.apiKey })).json()) as { data: Record<string, unknown> }).data;
    // One report of weight 1.0, capped at 0.5: round(100 × e^(−0.5/1.5)) = 72, MEDIUM under a LOW threshold of 90.
    expect(data).toMatchObject({ reputationScore: 72, riskLevel: "MEDIUM" });
  });

  test("a bad value is refused when the configuration is read", async () => {
    const { resolveConfig } = await import("../../src/config");
    expect(() => resolveConfig(new Map([["--scoring", ['{"perReporterCap":-1}']]]))).toThrow(/--scoring/);
    expect(() => resolveConfig(new Map(), { ABUSE_INTEL_SCORING: "not json" })).toThrow(/ABUSE_INTEL_SCORING must be a JSON object/);
  });
});
