// Daily request budgets (contract section 4): counts every authenticated request per account and UTC day in
// memory, exactly (JavaScript runs one check-and-count at a time), and flushes the counts to rate_counters
// every few seconds and at stop so they survive a restart. A crash forgets at most the last flush interval.

import { RateCounterTable } from "../../store/rate-counters";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import type { Tier } from "../../domain/principal";
import { inTransaction, type Store } from "../../store/database";

export const TIER_DAILY_BUDGETS: Readonly<Record<Tier, number | null>> = { free: 1_000, pro: 100_000, enterprise: null };

/** The budget in force for an account: its dailyLimit override, else its tier's; null means unlimited. */
export function dailyBudgetOf(account: { tier: Tier; dailyLimit: number | null }): number | null {
  return account.dailyLimit ?? TIER_DAILY_BUDGETS[account.tier];
}

export const DAY_MS = 86_400_000;
/** How often counts are written to the store: the most a crash can forget. */
export const RATE_FLUSH_INTERVAL_MS = 5_000;
/** Older rows of rate_counters are dropped at start; nothing reads them. */
const KEEP_DAYS = 90;

interface Counter {
  userId: number;
  /** Days since the epoch, UTC. */
  day: number;
  count: number;
  /** The count last written to the store (so a flush writes only what changed). */
  stored: number;
}

export class RateLimiter {
  private readonly counters = new Map<number, Counter>();
  /** Counts of a finished day not yet written when the day rolled over. */
  private readonly finishedDays: Counter[] = [];
  private resetDay = -1;
  private resetText = "";
  /** The day the latest `take` counted in. */
  private takeDay = -1;

  private readonly table: RateCounterTable;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {
    this.table = new RateCounterTable(store);
  }

  /** Loads today's counts (so a restart keeps them) and drops rows nobody will read again. */
  load(): void {
    const today = dayOf(this.clock.now());
    this.table.dropBefore(today - KEEP_DAYS);
    for (const row of this.table.ofDay(today)) {
      const existing = this.counters.get(row.userId);
      if (existing && existing.day === today) existing.count = Math.max(existing.count, row.count);
      else this.counters.set(row.userId, { userId: row.userId, day: today, count: row.count, stored: row.count });
    }
  }

  /**
   * Counts one request of `userId` against `budget` (not null: unlimited accounts are not counted). Returns
   * the requests left after this one, or -1 when the budget is spent (the request is then not counted).
   * Synchronous on purpose: no other request can run between the check and the count.
   */
  take(userId: number, budget: number): number {
    const day = dayOf(this.clock.now());
    this.takeDay = day;
    let counter = this.counters.get(userId);
    if (counter === undefined) {
      counter = { userId, day, count: 0, stored: 0 };
      this.counters.set(userId, counter);
    } else if (counter.day !== day) {
      if (counter.count !== counter.stored) this.finishedDays.push({ ...counter });
      counter.day = day;
      counter.count = 0;
      counter.stored = 0;
    }
    if (counter.count >= budget) return -1;
    counter.count++;
    return budget - counter.count;
  }

  /** Requests counted today for `userId`. */
  used(userId: number): number {
    const counter = this.counters.get(userId);
    return counter !== undefined && counter.day === dayOf(this.clock.now()) ? counter.count : 0;
  }

  /** `X-RateLimit-Reset`: unix seconds of the next UTC midnight, as text (made once a day). */
  resetHeader(): string {
    return this.resetHeaderOf(dayOf(this.clock.now()));
  }

  /** `X-RateLimit-Reset` for the request `take` just counted (without reading the clock again). */
  resetHeaderOfLastTake(): string {
    return this.resetHeaderOf(this.takeDay);
  }

  private resetHeaderOf(day: number): string {
    if (day !== this.resetDay) {
      this.resetDay = day;
      this.resetText = String((day + 1) * (DAY_MS / 1000));
    }
    return this.resetText;
  }

  /** Whole seconds until the next UTC midnight, at least 1. */
  retryAfterSeconds(): number {
    const now = this.clock.now();
    return Math.max(1, Math.ceil(((dayOf(now) + 1) * DAY_MS - now) / 1000));
  }

  /** The 429 for a spent budget, with Retry-After and the three headers. */
  limitedError(budget: number): AppError {
    return new AppError("rate_limited", `The daily request budget of ${budget} is used up; it resets at 00:00 UTC`, {
      headers: {
        "retry-after": String(this.retryAfterSeconds()),
        "x-ratelimit-limit": String(budget),
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": this.resetHeader(),
      },
    });
  }

  /** Writes every count that changed since the last flush, in one transaction. */
  flush(): void {
    const changed: Counter[] = [...this.finishedDays];
    for (const counter of this.counters.values()) if (counter.count !== counter.stored) changed.push(counter);
    if (changed.length === 0) return;
    // Synchronous from here to the end: no request can count in between, so `stored` matches what was written.
    // Marked written only once written: a failed write (the database busy) is retried whole by the next flush.
    inTransaction(this.store, () => this.table.write(changed));
    this.finishedDays.length = 0;
    for (const c of changed) c.stored = c.count;
  }
}

function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}
