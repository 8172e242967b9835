import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { addUser, type TestUser } from "../support/accounts";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DAY = 86_400_000;
const whoami = (headers: Record<string, string>) => h.call("GET", "/v1/auth/whoami", { headers });
/** Unix seconds of the UTC midnight after the harness clock's present. */
const nextMidnight = () => String((Math.floor(h.clock.now() / DAY) + 1) * (DAY / 1000));
const rateHeaders = (res: Response) => ({
  limit: res.headers.get("x-ratelimit-limit"),
  remaining: res.headers.get("x-ratelimit-remaining"),
  reset: res.headers.get("x-ratelimit-reset"),
});

async function jwtOf(user: TestUser) {
  const { accessToken } = await h.services.credentials.issueToken(user.user);
  return { authorization: `Bearer ${accessToken}` };
}

describe("budgets by tier (contract section 4)", () => {
  test.each([
    ["free", null, "1000"],
    ["pro", null, "100000"],
    ["free", 25, "25"],
    ["enterprise", 40, "40"],
  ] as const)("%s with dailyLimit %p: X-RateLimit-Limit %s and the reset at the next UTC midnight", async (tier, dailyLimit, limit) => {
    const user = await addUser(h, { tier, dailyLimit });
    const res = await whoami(user.apiKey);
    expect(res.status).toBe(200);
    expect(rateHeaders(res)).toEqual({ limit, remaining: String(Number(limit) - 1), reset: nextMidnight() });
    expect(nextMidnight()).toBe(String(Date.parse("2026-11-22T00:00:00.000Z") / 1000));
  });

  test("an unlimited (enterprise) account gets no headers", async () => {
    const user = await addUser(h, { tier: "enterprise" });
    for (let i = 0; i < 3; i++) {
      const res = await whoami(user.apiKey);
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toEqual({ limit: null, remaining: null, reset: null });
    }
  });

  test("the budget is the account's: its keys and tokens share it", async () => {
    const user = await addUser(h, { dailyLimit: 10 });
    const second = h.services.apiKeys.create(user.user.id, "second").key;
    const remaining: (string | null)[] = [];
    for (const headers of [user.apiKey, user.bearerKey, await jwtOf(user), { "x-api-key": second }]) {
      remaining.push((await whoami(headers)).headers.get("x-ratelimit-remaining"));
    }
    expect(remaining).toEqual(["9", "8", "7", "6"]);
  });

  test("refused requests (401, 403) do not count", async () => {
    const user = await addUser(h, { dailyLimit: 10 });
    expect((await h.call("GET", "/v1/keys", { headers: user.apiKey })).status).toBe(401);
    expect((await h.call("GET", "/v1/admin/users", { headers: await jwtOf(user) })).status).toBe(403);
    expect((await whoami(user.apiKey)).headers.get("x-ratelimit-remaining")).toBe("9");
  });

  test("a counted request that fails later still carries the headers", async () => {
    const user = await addUser(h, { dailyLimit: 10 });
    const res = await h.call("POST", "/v1/keys", { headers: await jwtOf(user), json: { name: "" } });
    expect(res.status).toBe(400);
    expect(rateHeaders(res)).toEqual({ limit: "10", remaining: "9", reset: nextMidnight() });
  });

  test("so does a lookup of a bad address on Bun's own router (400, counted)", async () => {
    const user = await addUser(h, { dailyLimit: 10 });
    const res = await h.call("GET", "/v1/ip/300.1.2.3/reputation", { headers: user.apiKey });
    expect(res.status).toBe(400);
    expect(rateHeaders(res)).toEqual({ limit: "10", remaining: "9", reset: nextMidnight() });
    const ok = await h.call("GET", "/v1/ip/203.0.113.9/reputation", { headers: user.apiKey });
    expect(ok.status).toBe(200);
    expect(rateHeaders(ok)).toEqual({ limit: "10", remaining: "8", reset: nextMidnight() });
  });
});

describe("over budget", () => {
  test("429 rate_limited with Retry-After until the next UTC midnight; a new UTC day resets", async () => {
    h.clock.set("2026-11-21T08:00:00.000Z");
    const user = await addUser(h, { dailyLimit: 3 });
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(rateHeaders(await whoami(user.apiKey)).remaining);
    expect(seen).toEqual(["2", "1", "0"]);

    const refused = await whoami(user.apiKey);
    expect(refused.status).toBe(429);
    expect(await bodyOf(refused)).toEqual({
      success: false,
      error: "The daily request budget of 3 is used up; it resets at 00:00 UTC",
      code: "rate_limited",
    });
    expect(refused.headers.get("retry-after")).toBe(String(16 * 3600));
    expect(rateHeaders(refused)).toEqual({ limit: "3", remaining: "0", reset: nextMidnight() });

    // Retry-After is whole seconds, rounded up, never 0.
    h.clock.set("2026-11-21T23:59:58.250Z");
    expect((await whoami(user.apiKey)).headers.get("retry-after")).toBe("2");
    h.clock.set("2026-11-21T23:59:59.999Z");
    expect((await whoami(user.apiKey)).headers.get("retry-after")).toBe("1");

    h.clock.set("2026-11-22T00:00:00.000Z");
    const nextDay = await whoami(user.apiKey);
    expect(nextDay.status).toBe(200);
    expect(rateHeaders(nextDay)).toEqual({ limit: "3", remaining: "2", reset: String(Date.parse("2026-11-23T00:00:00.000Z") / 1000) });
    h.clock.set("2026-11-21T08:00:00.000Z");
  });

  test("a dailyLimit of 0 refuses everything", async () => {
    const user = await addUser(h, { dailyLimit: 0 });
    expect((await whoami(user.apiKey)).status).toBe(429);
  });

  test("raising the limit lets the account in again the same day", async () => {
    const user = await addUser(h, { dailyLimit: 1 });
    expect((await whoami(user.apiKey)).status).toBe(200);
    expect((await whoami(user.apiKey)).status).toBe(429);
    h.services.accounts.update(user.user.id, { dailyLimit: 3 });
    const res = await whoami(user.apiKey);
    expect(res.status).toBe(200);
    expect(rateHeaders(res).remaining).toBe("1");
  });
});

describe("exact under concurrency", () => {
  test("50 requests at once with 20 left: exactly 20 succeed (keys and first-seen JWTs mixed)", async () => {
    const user = await addUser(h, { dailyLimit: 25 });
    for (let i = 0; i < 5; i++) expect((await whoami(user.apiKey)).status).toBe(200);
    const headerSets = await Promise.all(Array.from({ length: 50 }, async (_, i) => (i % 2 === 0 ? user.apiKey : await jwtOf(user))));
    const results = await Promise.all(headerSets.map((headers) => whoami(headers)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(20);
    expect(results.filter((r) => r.status === 429)).toHaveLength(30);
    // Each success saw a different remaining count: 19 down to 0.
    expect(ok.map((r) => Number(r.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  test("the same over many connections at once", async () => {
    const user = await addUser(h, { dailyLimit: 20 });
    {
      const url = `${h.url}/v1/auth/whoami`;
      const results = await Promise.all(Array.from({ length: 50 }, () => fetch(url, { headers: user.apiKey })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(20);
      expect(results.filter((r) => r.status === 429)).toHaveLength(30);
      await Promise.all(results.map((r) => r.arrayBuffer()));
    }
  });
});

describe("counts survive a restart", () => {
  test("a new instance on the same data directory continues the day's count", async () => {
    let g = await createHarness();
    try {
      const user = await addUser(g, { dailyLimit: 5 });
      for (let i = 0; i < 2; i++) expect((await g.call("GET", "/v1/auth/whoami", { headers: user.apiKey })).status).toBe(200);
      g = await g.reopen();
      const after = await g.call("GET", "/v1/auth/whoami", { headers: user.apiKey });
      expect(after.headers.get("x-ratelimit-remaining")).toBe("2");
    } finally {
      await g.close();
    }
  });

  test("counts are written by the periodic flush, not only at stop", async () => {
    const user = await addUser(h, { dailyLimit: 50 });
    for (let i = 0; i < 4; i++) await whoami(user.apiKey);
    const stored = () =>
      h.store.sqlite.query<{ count: number }, [number]>("SELECT count FROM rate_counters WHERE user_id = ?").get(user.user.id)?.count ?? null;
    expect(stored()).toBeNull();
    h.services.rateLimiter.flush();
    expect(stored()).toBe(4);
  });
});
