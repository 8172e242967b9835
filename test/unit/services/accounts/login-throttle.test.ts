import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ManualClock } from "../../../../src/domain/clock";
import { AppError } from "../../../../src/domain/errors";
import { openMemoryStore, type Store } from "../../../../src/store/database";
import { LoginThrottle } from "../../../../src/services/accounts/login-throttle";

let store: Store;
let clock: ManualClock;
let throttle: LoginThrottle;
beforeEach(() => {
  store = openMemoryStore();
  clock = new ManualClock();
  throttle = new LoginThrottle(store, clock);
});
afterEach(() => store.close());

const attempt = (succeeded: boolean, email = "a@example.com") => {
  throttle.begin(email);
  throttle.finish(email, succeeded);
};
const lockedFor = (email = "a@example.com") => throttle.secondsLocked(email);

describe("LoginThrottle", () => {
  test("the window slides: the lock lifts when the oldest of the last 10 failures is 15 minutes old", () => {
    for (let i = 0; i < 10; i++) {
      attempt(false);
      clock.advance(60_000); // one failure a minute
    }
    // Failures at minutes 0..9, now is minute 10: the one at 0 leaves the window at minute 15.
    expect(lockedFor()).toBe(5 * 60);
    expect(lockedFor("other@example.com")).toBe(0);
    clock.advance(5 * 60_000 - 1);
    expect(lockedFor()).toBe(1);
    clock.advance(1);
    expect(lockedFor()).toBe(0);
    // One more failure locks again until the one at minute 1 leaves the window.
    attempt(false);
    expect(lockedFor()).toBe(60);
  });

  test("begin throws 429 with Retry-After while locked", () => {
    for (let i = 0; i < 10; i++) attempt(false);
    let caught: unknown;
    try {
      throttle.begin("a@example.com");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect((caught as AppError).errorCode).toBe("rate_limited");
    expect((caught as AppError).headers).toEqual({ "retry-after": "900" });
  });

  test("nine failures do not lock", () => {
    for (let i = 0; i < 9; i++) attempt(false);
    expect(lockedFor()).toBe(0);
  });

  test("a success forgets the email's failures", () => {
    for (let i = 0; i < 9; i++) attempt(false);
    attempt(true);
    for (let i = 0; i < 9; i++) attempt(false);
    expect(lockedFor()).toBe(0);
  });

  test("attempts under way count: the 11th concurrent attempt is refused", () => {
    for (let i = 0; i < 10; i++) throttle.begin("c@example.com");
    expect(() => throttle.begin("c@example.com")).toThrow(AppError);
    throttle.finish("c@example.com", false);
    // 9 still running + 1 stored failure = 10.
    expect(() => throttle.begin("c@example.com")).toThrow(AppError);
    for (let i = 0; i < 9; i++) throttle.finish("c@example.com", true);
    expect(lockedFor("c@example.com")).toBe(0);
  });
});
