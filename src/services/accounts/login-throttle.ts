// The login lockout (contract section 3): after 10 failed logins for one email within 15 minutes, further
// attempts get 429 until the window has passed. Failures are kept in login_failures, so a restart does not
// open the door again.
//
// The window slides: the lock lifts when the oldest of the last 10 failures is 15 minutes old, so nobody gets
// more than 10 guesses in any 15 minutes. Attempts refused with 429 are not failures (they would extend the
// lock for ever); a successful login forgets the email's failures.

import { LoginFailureTable } from "../../store/login-failures";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import type { Store } from "../../store/database";

export const LOGIN_MAX_FAILURES = 10;
export const LOGIN_WINDOW_MS = 15 * 60_000;
/** Old rows are swept at most this often, so a flood of failures for made-up emails cannot grow the table. */
const SWEEP_EVERY_MS = 60_000;

export class LoginThrottle {
  private lastSweep = 0;
  /** Attempts whose password check is running, by email: they count as failures until they finish, so
   * guesses sent all at once cannot slip past the limit while the (slow) hash check runs. */
  private readonly inFlight = new Map<string, number>();

  private readonly failures: LoginFailureTable;

  constructor(
    store: Store,
    private readonly clock: Clock,
    private readonly maxFailures = LOGIN_MAX_FAILURES,
    private readonly windowMs = LOGIN_WINDOW_MS,
  ) {
    this.failures = new LoginFailureTable(store);
  }

  /**
   * Reserves one login attempt for `email` (the normalized, lowercase form), or throws 429 with Retry-After
   * when it is locked out. Every begin must be followed by one finish.
   */
  begin(email: string): void {
    const running = this.inFlight.get(email) ?? 0;
    const seconds = this.secondsLocked(email);
    if (seconds > 0) {
      throw new AppError("rate_limited", `Too many failed logins for this account; try again in ${seconds} seconds`, {
        headers: { "retry-after": String(seconds) },
      });
    }
    this.inFlight.set(email, running + 1);
  }

  /** Ends an attempt begun with begin: a failure is stored, a success forgets the email's failures. */
  finish(email: string, succeeded: boolean): void {
    const running = (this.inFlight.get(email) ?? 1) - 1;
    if (running > 0) this.inFlight.set(email, running);
    else this.inFlight.delete(email);
    if (succeeded) this.failures.forget(email);
    else this.recordFailure(email);
  }

  /** Seconds until `email` may try again (attempts under way counted as failures); 0 when it may now. */
  secondsLocked(email: string): number {
    const running = this.inFlight.get(email) ?? 0;
    const offset = this.maxFailures - 1 - running;
    if (offset < 0) return 1;
    const now = this.clock.now();
    // The (maxFailures - running)-th most recent failure inside the window, if there are that many.
    const at = this.failures.nthRecent(email, now - this.windowMs, offset);
    return at !== null ? Math.max(1, Math.ceil((at + this.windowMs - now) / 1000)) : 0;
  }

  private recordFailure(email: string): void {
    const now = this.clock.now();
    this.failures.record(email, now);
    if (now - this.lastSweep >= SWEEP_EVERY_MS) {
      this.lastSweep = now;
      this.failures.sweep(now - this.windowMs);
    }
  }
}
