// The reports of one address, as AbuseIPDB's API shows them (contract 13): counts and pages of those made within
// the last days, and clearing them. Only reports that count (pending or verified) are shown or counted.

import type { Database } from "bun:sqlite";
import type { Store } from "./database";
import { countReportDeletion, keepClearedReportTimes } from "./report-deletions";

export interface AddressReportRow {
  id: number;
  reporterId: number;
  category: string;
  description: string;
  createdAt: number;
}

export interface AddressReportSummary {
  total: number;
  reporters: number;
  /** The newest report's time, or null when there is none. */
  lastAt: number | null;
}

/** A report deleteOf deleted. */
export interface DeletedReport {
  id: number;
  reporterId: number;
  createdAt: number;
}

const COUNTING = "status IN ('pending', 'verified')";

export class AddressReports {
  private readonly summary;
  private readonly page;
  private readonly reportsOf;
  private readonly reportsOfReporter;
  private readonly sqlite: Database;

  constructor(store: Store) {
    const db = store.sqlite;
    this.sqlite = db;
    this.summary = db.prepare<AddressReportSummary, [string, number]>(
      `SELECT count(*) AS total, count(DISTINCT reporter_id) AS reporters, max(created_at) AS lastAt
         FROM reports WHERE ip = ? AND created_at >= ? AND ${COUNTING}`,
    );
    this.page = db.prepare<AddressReportRow, [string, number, number, number]>(
      `SELECT id, reporter_id AS reporterId, category, description, created_at AS createdAt
         FROM reports WHERE ip = ? AND created_at >= ? AND ${COUNTING}
        ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
    );
    const deletable = "SELECT id, reporter_id AS reporterId, created_at AS createdAt FROM reports";
    this.reportsOf = db.prepare<DeletedReport, [string]>(`${deletable} WHERE ip = ?`);
    this.reportsOfReporter = db.prepare<DeletedReport, [string, number]>(`${deletable} WHERE ip = ? AND reporter_id = ?`);
  }

  /** Counting reports of `ipText` made at or after `sinceMs`. */
  summarySince(ipText: string, sinceMs: number): AddressReportSummary {
    return this.summary.get(ipText, sinceMs) ?? { total: 0, reporters: 0, lastAt: null };
  }

  /** A page of them, newest first. */
  pageSince(ipText: string, sinceMs: number, limit: number, offset: number): AddressReportRow[] {
    return this.page.all(ipText, sinceMs, limit, offset);
  }

  /**
   * Deletes the reports of `ipText` (only `reporterId`'s when given, whatever their state) with their transitions,
   * and returns them, with what a deletion leaves behind (report-deletions.ts): the deletion counted, and each
   * reporter's newest deleted report time kept while it is after `duplicateSinceMs`. Ledger rows stay: the caller
   * reverses the credits. Call inside a transaction.
   */
  deleteOf(ipText: string, reporterId: number | null, duplicateSinceMs: number): DeletedReport[] {
    const deleted = reporterId === null ? this.reportsOf.all(ipText) : this.reportsOfReporter.all(ipText, reporterId);
    const ids = deleted.map((r) => r.id);
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const marks = chunk.map(() => "?").join(",");
      this.sqlite.prepare(`DELETE FROM report_transitions WHERE report_id IN (${marks})`).run(...chunk);
      this.sqlite.prepare(`DELETE FROM reports WHERE id IN (${marks})`).run(...chunk);
    }
    if (ids.length > 0) {
      countReportDeletion(this.sqlite);
      keepClearedReportTimes(this.sqlite, ipText, deleted, duplicateSinceMs);
    }
    return deleted;
  }
}
