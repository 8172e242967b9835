import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ManualClock } from "../../../../src/domain/clock";
import { openMemoryStore, type Store } from "../../../../src/store/database";
import { dailyBudgetOf, RateLimiter } from "../../../../src/services/accounts/rate-limiter";

let store: Store;
let clock: ManualClock;
beforeEach(() => {
  store = openMemoryStore();
  clock = new ManualClock(Date.parse("2026-11-21T12:00:00.000Z"));
  for (const id of [1, 2]) {
    store.sqlite.query("INSERT INTO users (id, email, password_hash, created_at, updated_at) VALUES (?, ?, 'x', 0, 0)").run(id, `u${id}@example.com`);
  }
});
afterEach(() => store.close());

const storedCounts = () => store.sqlite.query("SELECT user_id AS userId, day, count FROM rate_counters ORDER BY user_id, day").all();
const DAY_20778 = Math.floor(Date.parse("2026-11-21T00:00:00.000Z") / 86_400_000);

describe("dailyBudgetOf", () => {
  test.each([
    ["free", null, 1000],
    ["pro", null, 100_000],
    ["enterprise", null, null],
    ["free", 5, 5],
    ["enterprise", 0, 0],
  ] as const)("%s with dailyLimit %p → %p", (tier, dailyLimit, budget) => {
    expect(dailyBudgetOf({ tier, dailyLimit })).toBe(budget);
  });
});

describe("RateLimiter", () => {
  test("take counts down to 0, then refuses without counting", () => {
    const limiter = new RateLimiter(store, clock);
    expect([1, 2, 3, 4].map(() => limiter.take(1, 3))).toEqual([2, 1, 0, -1]);
    expect(limiter.used(1)).toBe(3);
    expect(limiter.used(2)).toBe(0);
  });

  test("a new UTC day starts from zero, and the finished day's count is still written", () => {
    const limiter = new RateLimiter(store, clock);
    limiter.take(1, 10);
    limiter.take(1, 10);
    clock.set("2026-11-22T00:00:00.000Z");
    expect(limiter.take(1, 10)).toBe(9);
    limiter.flush();
    expect(storedCounts()).toEqual([
      { userId: 1, day: DAY_20778, count: 2 },
      { userId: 1, day: DAY_20778 + 1, count: 1 },
    ]);
  });

  test("flush writes only what changed; load restores today's counts", () => {
    const limiter = new RateLimiter(store, clock);
    for (let i = 0; i < 4; i++) limiter.take(1, 10);
    limiter.take(2, 10);
    limiter.flush();
    store.sqlite.exec("UPDATE rate_counters SET count = 99 WHERE user_id = 2");
    limiter.take(1, 10);
    limiter.flush(); // user 2 did not change: its row is left alone
    expect(storedCounts()).toEqual([
      { userId: 1, day: DAY_20778, count: 5 },
      { userId: 2, day: DAY_20778, count: 99 },
    ]);

    const restarted = new RateLimiter(store, clock);
    restarted.load();
    expect(restarted.used(1)).toBe(5);
    expect(restarted.take(1, 10)).toBe(4);
  });

  test("load ignores other days", () => {
    store.sqlite.query("INSERT INTO rate_counters (user_id, day, count) VALUES (1, ?, 7)").run(DAY_20778 - 1);
    const limiter = new RateLimiter(store, clock);
    limiter.load();
    expect(limiter.used(1)).toBe(0);
  });

  test("the reset is the next UTC midnight; Retry-After rounds up and is at least 1", () => {
    const limiter = new RateLimiter(store, clock);
    expect(limiter.resetHeader()).toBe(String(Date.parse("2026-11-22T00:00:00.000Z") / 1000));
    expect(limiter.retryAfterSeconds()).toBe(12 * 3600);
    clock.set("2026-11-21T23:59:59.001Z");
    expect(limiter.retryAfterSeconds()).toBe(1);
    clock.set("2026-11-22T00:00:00.000Z");
    expect(limiter.resetHeader()).toBe(String(Date.parse("2026-11-23T00:00:00.000Z") / 1000));
    expect(limiter.retryAfterSeconds()).toBe(86_400);
  });
});
