// The `login_failures` table (contract section 3): failed logins by email, for the lockout.

import type { Store } from "./database";

export class LoginFailureTable {
  constructor(private readonly store: Store) {}

  record(email: string, atMs: number): void {
    this.store.sqlite.query("INSERT INTO login_failures (email, at) VALUES (?, ?)").run(email, atMs);
  }

  forget(email: string): void {
    this.store.sqlite.query("DELETE FROM login_failures WHERE email = ?").run(email);
  }

  /** Drops failures at or before `atMs`. */
  sweep(atMs: number): void {
    this.store.sqlite.query("DELETE FROM login_failures WHERE at <= ?").run(atMs);
  }

  /** The time of the (offset+1)-th most recent failure of `email` after `sinceMs`, or null. */
  nthRecent(email: string, sinceMs: number, offset: number): number | null {
    const row = this.store.sqlite
      .query<{ at: number }, [string, number, number]>("SELECT at FROM login_failures WHERE email = ? AND at > ? ORDER BY at DESC LIMIT 1 OFFSET ?")
      .get(email, sinceMs, offset);
    return row?.at ?? null;
  }
}
