// Credits (contract 5.6): the ledger writer the report services call inside their transactions, and the reads
// behind `GET /v1/credits/balance` and `/v1/credits/history`.
//
// What the totals mean (the contract names them, this decides them): `balance` is the sum of every ledger row, so
// a reversal lowers it. `lifetimeEarned` is the sum of the positive rows only: credits ever earned, which a
// reversal does not rewrite (it is a later, negative row). `reportsAccepted` counts reports ever accepted (201) and
// `reportsVerified` reports that ever became verified; like lifetimeEarned they are lifetime counts, so only the
// balance moves down when an admin rejects a report.

import { isoTime } from "../../domain/clock";
import type { Store } from "../../store/database";

/** Why a ledger row exists. */
export type CreditReason = "report_accepted" | "report_verified" | "report_rejected" | "verification_reversed";

export const CREDITS_FOR_ACCEPTED_REPORT = 1;
export const CREDITS_FOR_VERIFIED_REPORT = 2;

/** `data` of `GET /v1/credits/balance`. */
export interface CreditBalanceView {
  balance: number;
  lifetimeEarned: number;
  reportsAccepted: number;
  reportsVerified: number;
  /** Time of the last change; null when the account has never had a credit. */
  updatedAt: string | null;
}

/** One row of `GET /v1/credits/history`. */
export interface LedgerEntryView {
  id: string;
  delta: number;
  reason: CreditReason;
  reportId: string | null;
  createdAt: string;
}

export interface LedgerPage {
  entries: LedgerEntryView[];
  /** Rows the account has in all. */
  total: number;
}

/** Counters of credit_balances a ledger row moves with it. */
export interface CounterChange {
  accepted?: number;
  verified?: number;
}

/**
 * Writes ledger rows and keeps credit_balances equal to their totals. Call inside the caller's transaction: the
 * row and the totals commit together with the change that earned them.
 */
export class CreditLedger {
  private readonly insertRow;
  private readonly upsertTotals;
  private readonly creditedOf;

  constructor(store: Pick<Store, "sqlite">) {
    const sqlite = store.sqlite;
    this.insertRow = sqlite.prepare<never, [number, number, string, number | null, number]>(
      "INSERT INTO credit_ledger (user_id, delta, reason, report_id, created_at) VALUES (?, ?, ?, ?, ?)",
    );
    this.upsertTotals = sqlite.prepare<{ balance: number }, [number, number, number, number, number, number]>(
      `INSERT INTO credit_balances (user_id, balance, lifetime_earned, reports_accepted, reports_verified, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6)
       ON CONFLICT(user_id) DO UPDATE SET
         balance = balance + excluded.balance, lifetime_earned = lifetime_earned + excluded.lifetime_earned,
         reports_accepted = reports_accepted + excluded.reports_accepted,
         reports_verified = reports_verified + excluded.reports_verified, updated_at = excluded.updated_at
       RETURNING balance`,
    );
    this.creditedOf = sqlite.prepare<{ reason: CreditReason; delta: number }, [number]>(
      "SELECT reason, delta FROM credit_ledger WHERE report_id = ? ORDER BY id",
    );
  }

  /** Adds one ledger row and moves the totals; returns the new balance. */
  record(userId: number, delta: number, reason: CreditReason, reportId: number | null, atMs: number, counters: CounterChange = {}): number {
    this.insertRow.run(userId, delta, reason, reportId, atMs);
    return this.upsertTotals.get(userId, delta, Math.max(delta, 0), counters.accepted ?? 0, counters.verified ?? 0, atMs)!.balance;
  }

  /**
   * Reverses what a report earned, one negative row per credit it received (−1 for being accepted, −2 more if it
   * had been verified). A report that earned nothing (an imported one) gets no rows. Returns the rows written.
   */
  reverseReport(userId: number, reportId: number, atMs: number): number {
    let rows = 0;
    for (const row of this.creditedOf.all(reportId)) {
      if (row.delta <= 0) continue;
      const reason: CreditReason | null = row.reason === "report_accepted" ? "report_rejected" : row.reason === "report_verified" ? "verification_reversed" : null;
      if (reason === null) continue;
      this.record(userId, -row.delta, reason, reportId, atMs);
      rows++;
    }
    return rows;
  }
}

/** The reads of an account's credits. */
export class CreditService {
  private readonly selectBalance;
  private readonly selectPage;
  private readonly countRows;

  constructor(store: Pick<Store, "sqlite">) {
    const sqlite = store.sqlite;
    this.selectBalance = sqlite.prepare<
      { balance: number; lifetimeEarned: number; reportsAccepted: number; reportsVerified: number; updatedAt: number },
      [number]
    >(
      `SELECT balance, lifetime_earned AS lifetimeEarned, reports_accepted AS reportsAccepted,
              reports_verified AS reportsVerified, updated_at AS updatedAt
         FROM credit_balances WHERE user_id = ?`,
    );
    this.selectPage = sqlite.prepare<
      { id: number; delta: number; reason: CreditReason; reportId: number | null; createdAt: number },
      [number, number, number]
    >(
      `SELECT id, delta, reason, report_id AS reportId, created_at AS createdAt
         FROM credit_ledger WHERE user_id = ? ORDER BY id DESC LIMIT ? OFFSET ?`,
    );
    this.countRows = sqlite.prepare<{ n: number }, [number]>("SELECT count(*) AS n FROM credit_ledger WHERE user_id = ?");
  }

  balance(userId: number): CreditBalanceView {
    const row = this.selectBalance.get(userId);
    if (!row) return { balance: 0, lifetimeEarned: 0, reportsAccepted: 0, reportsVerified: 0, updatedAt: null };
    return {
      balance: row.balance,
      lifetimeEarned: row.lifetimeEarned,
      reportsAccepted: row.reportsAccepted,
      reportsVerified: row.reportsVerified,
      updatedAt: isoTime(row.updatedAt),
    };
  }

  /** Ledger rows newest first (ids grow with time, so id order is time order). */
  history(userId: number, limit: number, offset: number): LedgerPage {
    const entries = this.selectPage.all(userId, limit, offset).map((r) => ({
      id: String(r.id),
      delta: r.delta,
      reason: r.reason,
      reportId: r.reportId === null ? null : String(r.reportId),
      createdAt: isoTime(r.createdAt),
    }));
    return { entries, total: this.countRows.get(userId)!.n };
  }
}
