// The `rate_counters` table (contract section 4): each account's requests per UTC day, kept across restarts.

import type { Store } from "./database";

export interface DayCount {
  userId: number;
  day: number;
  count: number;
}

export class RateCounterTable {
  constructor(private readonly store: Store) {}

  /** Drops the days before `day`. */
  dropBefore(day: number): void {
    this.store.sqlite.query("DELETE FROM rate_counters WHERE day < ?").run(day);
  }

  ofDay(day: number): DayCount[] {
    return this.store.sqlite.query<DayCount, [number]>("SELECT user_id AS userId, day, count FROM rate_counters WHERE day = ?").all(day);
  }

  /** Writes counts, never lowering one already stored; call inside a transaction. */
  write(counts: Iterable<DayCount>): void {
    const upsert = this.store.sqlite.query<unknown, [number, number, number]>(
      "INSERT INTO rate_counters (user_id, day, count) VALUES (?, ?, ?) ON CONFLICT (user_id, day) DO UPDATE SET count = max(count, excluded.count)",
    );
    for (const c of counts) upsert.run(c.userId, c.day, c.count);
  }
}
