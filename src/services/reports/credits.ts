// Credits (contract 5.6): the ledger writer the report services call inside their transactions, and the reads
// behind `GET /v1/credits/balance` and `/v1/credits/history`.
//
// What the totals mean (the contract names them, this decides them): `balance` is the sum of every ledger row, so
// a reversal lowers it. `lifetimeEarned` is the sum of the positive rows only: credits ever earned, which a
// reversal does not rewrite (it is a later, negative row). `reportsAccepted` counts reports ever accepted (201) and
// `reportsVerified` reports that ever became verified; like lifetimeEarned they are lifetime counts, so only the
// balance moves down when an admin rejects a report.

import { isoTime } from "../../domain/clock";
import { CreditTables } from "../../store/credits";
import type { Store } from "../../store/database";

/** Why a ledger row exists. */
export type CreditReason = "report_accepted" | "report_verified" | "report_rejected" | "verification_reversed" | "report_cleared";

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
  private readonly tables: CreditTables;

  constructor(store: Pick<Store, "sqlite">) {
    this.tables = new CreditTables(store);
  }

  /** Adds one ledger row and moves the totals; returns the new balance. */
  record(userId: number, delta: number, reason: CreditReason, reportId: number | null, atMs: number, counters: CounterChange = {}): number {
    return this.tables.addRow(userId, delta, reason, reportId, atMs, counters.accepted ?? 0, counters.verified ?? 0);
  }

  /** Adds one ledger row WITHOUT moving the totals: a TotalsOfRows (totalsOfRows()) moves them once per account. */
  recordRow(userId: number, delta: number, reason: CreditReason, reportId: number | null, atMs: number): void {
    this.tables.insertRow(userId, delta, reason, reportId, atMs);
  }

  /** Collects the totals of rows written with recordRow, to move them in one statement per account. */
  totalsOfRows(): TotalsOfRows {
    return new TotalsOfRows(this.tables);
  }

  /**
   * Reverses what a report earned, one negative row per credit it received (−1 for being accepted, −2 more if it
   * had been verified). A report that earned nothing (an imported one) gets no rows. Returns the rows written.
   */
  reverseReport(userId: number, reportId: number, atMs: number): number {
    let rows = 0;
    for (const row of this.tables.rowsOfReport(reportId)) {
      if (row.delta <= 0) continue;
      const reason: CreditReason | null = row.reason === "report_accepted" ? "report_rejected" : row.reason === "report_verified" ? "verification_reversed" : null;
      if (reason === null) continue;
      this.record(userId, -row.delta, reason, reportId, atMs);
      rows++;
    }
    return rows;
  }

  /**
   * Takes back what deleted reports still hold, as a rejection does: one `report_cleared` row each, of minus the
   * sum of its rows, when that is above 0 (an imported report earned nothing; a rejected one gave it back already).
   * Call in the transaction that deletes them.
   */
  reverseDeleted(reportIds: readonly number[], atMs: number): void {
    const totals = this.totalsOfRows();
    for (let i = 0; i < reportIds.length; i += 10_000) {
      for (const { reportId, userId, held } of this.tables.heldByReports(reportIds.slice(i, i + 10_000))) {
        if (held <= 0) continue;
        this.recordRow(userId, -held, "report_cleared", reportId, atMs);
        totals.add(userId, -held, atMs);
      }
    }
    totals.move();
  }
}

/** Where the balance right after one ledger row lands once its totals are moved. */
export interface BalanceAfterRow {
  balance: number;
}

interface AccountTotals {
  delta: number;
  lifetimeEarned: number;
  accepted: number;
  verified: number;
  atMs: number;
  rows: { delta: number; after: BalanceAfterRow }[];
}

/**
 * The totals of ledger rows a transaction wrote with recordRow, moved by move() once per account, as if each row
 * had moved them in turn: `updatedAt` becomes the last row's time, and each row's BalanceAfterRow the balance
 * right after it. Call move() inside the same transaction as the rows.
 */
export class TotalsOfRows {
  private readonly accounts = new Map<number, AccountTotals>();

  constructor(private readonly tables: CreditTables) {}

  /** Counts a row written with recordRow; its balance is known after move(). */
  add(userId: number, delta: number, atMs: number, counters: CounterChange = {}): BalanceAfterRow {
    let totals = this.accounts.get(userId);
    if (totals === undefined) {
      totals = { delta: 0, lifetimeEarned: 0, accepted: 0, verified: 0, atMs, rows: [] };
      this.accounts.set(userId, totals);
    }
    totals.delta += delta;
    totals.lifetimeEarned += Math.max(delta, 0);
    totals.accepted += counters.accepted ?? 0;
    totals.verified += counters.verified ?? 0;
    totals.atMs = atMs;
    const after: BalanceAfterRow = { balance: Number.NaN };
    totals.rows.push({ delta, after });
    return after;
  }

  move(): void {
    for (const [userId, t] of this.accounts) {
      let balance = this.tables.addToTotals(userId, t.delta, t.lifetimeEarned, t.accepted, t.verified, t.atMs) - t.delta;
      for (const row of t.rows) row.after.balance = balance += row.delta;
    }
    this.accounts.clear();
  }
}

/** The reads of an account's credits. */
export class CreditService {
  private readonly tables: CreditTables;

  constructor(store: Pick<Store, "sqlite">) {
    this.tables = new CreditTables(store);
  }

  balance(userId: number): CreditBalanceView {
    const row = this.tables.balance(userId);
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
    const entries = this.tables.page(userId, limit, offset).map((r) => ({
      id: String(r.id),
      delta: r.delta,
      reason: r.reason as CreditReason,
      reportId: r.reportId === null ? null : String(r.reportId),
      createdAt: isoTime(r.createdAt),
    }));
    return { entries, total: this.tables.count(userId) };
  }
}
