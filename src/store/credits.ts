// The `credit_ledger` and `credit_balances` tables (contract 5.6): every change of a balance is a ledger row, and
// the totals move with it in the same transaction.

import type { Store } from "./database";

export interface BalanceRow {
  balance: number;
  lifetimeEarned: number;
  reportsAccepted: number;
  reportsVerified: number;
  updatedAt: number;
}

export interface LedgerRow<Reason extends string = string> {
  id: number;
  delta: number;
  reason: Reason;
  reportId: number | null;
  createdAt: number;
}

/** The credits one report holds for one account: the sum of its ledger rows. */
export interface ReportCredits {
  reportId: number;
  userId: number;
  held: number;
}

export class CreditTables {
  private readonly stmt;

  constructor(store: Pick<Store, "sqlite">) {
    const sqlite = store.sqlite;
    this.stmt = {
      insertRow: sqlite.prepare<never, [number, number, string, number | null, number]>(
        "INSERT INTO credit_ledger (user_id, delta, reason, report_id, created_at) VALUES (?, ?, ?, ?, ?)",
      ),
      upsertTotals: sqlite.prepare<{ balance: number }, [number, number, number, number, number, number]>(
        `INSERT INTO credit_balances (user_id, balance, lifetime_earned, reports_accepted, reports_verified, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(user_id) DO UPDATE SET
           balance = balance + excluded.balance, lifetime_earned = lifetime_earned + excluded.lifetime_earned,
           reports_accepted = reports_accepted + excluded.reports_accepted,
           reports_verified = reports_verified + excluded.reports_verified, updated_at = excluded.updated_at
         RETURNING balance`,
      ),
      creditedOf: sqlite.prepare<{ reason: string; delta: number }, [number]>("SELECT reason, delta FROM credit_ledger WHERE report_id = ? ORDER BY id"),
      heldBy: sqlite.prepare<ReportCredits, [string]>(
        `SELECT report_id AS reportId, user_id AS userId, sum(delta) AS held
           FROM credit_ledger WHERE report_id IN (SELECT value FROM json_each(?)) GROUP BY report_id, user_id`,
      ),
      balance: sqlite.prepare<BalanceRow, [number]>(
        `SELECT balance, lifetime_earned AS lifetimeEarned, reports_accepted AS reportsAccepted,
                reports_verified AS reportsVerified, updated_at AS updatedAt
           FROM credit_balances WHERE user_id = ?`,
      ),
      page: sqlite.prepare<LedgerRow, [number, number, number]>(
        `SELECT id, delta, reason, report_id AS reportId, created_at AS createdAt
           FROM credit_ledger WHERE user_id = ? ORDER BY id DESC LIMIT ? OFFSET ?`,
      ),
      count: sqlite.prepare<{ n: number }, [number]>("SELECT count(*) AS n FROM credit_ledger WHERE user_id = ?"),
    };
  }

  /** Adds a ledger row and moves the totals (the lifetime ones by positive deltas only); returns the balance. */
  addRow(userId: number, delta: number, reason: string, reportId: number | null, atMs: number, accepted: number, verified: number): number {
    this.stmt.insertRow.run(userId, delta, reason, reportId, atMs);
    return this.stmt.upsertTotals.get(userId, delta, Math.max(delta, 0), accepted, verified, atMs)!.balance;
  }

  /** Adds a ledger row without moving the totals: the caller moves them with addToTotals in the same transaction. */
  insertRow(userId: number, delta: number, reason: string, reportId: number | null, atMs: number): void {
    this.stmt.insertRow.run(userId, delta, reason, reportId, atMs);
  }

  /** Moves an account's totals by the sums of rows written with insertRow; returns the balance. */
  addToTotals(userId: number, delta: number, lifetimeEarned: number, accepted: number, verified: number, atMs: number): number {
    return this.stmt.upsertTotals.get(userId, delta, lifetimeEarned, accepted, verified, atMs)!.balance;
  }

  /** The rows a report's credits were written as, oldest first. */
  rowsOfReport(reportId: number): { reason: string; delta: number }[] {
    return this.stmt.creditedOf.all(reportId);
  }

  /** What each of `reportIds` still holds in the ledger (the sum of its rows), per account; none for no rows. */
  heldByReports(reportIds: readonly number[]): ReportCredits[] {
    return this.stmt.heldBy.all(JSON.stringify(reportIds));
  }

  balance(userId: number): BalanceRow | null {
    return this.stmt.balance.get(userId) ?? null;
  }

  /** Ledger rows newest first (ids grow with time). */
  page(userId: number, limit: number, offset: number): LedgerRow[] {
    return this.stmt.page.all(userId, limit, offset);
  }

  count(userId: number): number {
    return this.stmt.count.get(userId)!.n;
  }
}
