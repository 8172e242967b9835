// What deleting reports from the store (gone, not rejected) leaves behind, written by the deleting transaction:
// - how many times reports were deleted, counted in `meta`: a process that keeps reports in memory between passes
//   (detect-threats' window) learns that some it holds may be gone, whichever process deleted them;
// - each reporter's newest deleted report of the address, while the 15-minute rule still reads it
//   (`cleared_report_times`): deleting a report must not let its reporter report the address again sooner.

import type { Database } from "bun:sqlite";

const KEY = "reports_deleted";

/** Counts one deletion; call inside the transaction that deletes. */
export function countReportDeletion(sqlite: Database): void {
  sqlite
    .query("INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1")
    .run(KEY);
}

/** The deletions counted so far ("0" before the first). */
export function reportDeletions(sqlite: Database): string {
  const row = sqlite.query("SELECT value FROM meta WHERE key = ?").get(KEY) as { value: string } | null;
  return row?.value ?? "0";
}

/**
 * Keeps, per reporter, the time of their newest report of `ipText` among `deleted`, when it is after `sinceMs` (the
 * start of the duplicate window); rows of earlier clearings that no longer matter are dropped on the way.
 */
export function keepClearedReportTimes(sqlite: Database, ipText: string, deleted: readonly { reporterId: number; createdAt: number }[], sinceMs: number): void {
  sqlite.query("DELETE FROM cleared_report_times WHERE reported_at <= ?").run(sinceMs);
  const newest = new Map<number, number>();
  for (const { reporterId, createdAt } of deleted) {
    if (createdAt > (newest.get(reporterId) ?? sinceMs)) newest.set(reporterId, createdAt);
  }
  const keep = sqlite.query(
    `INSERT INTO cleared_report_times (reporter_id, ip, reported_at) VALUES (?, ?, ?)
     ON CONFLICT (reporter_id, ip) DO UPDATE SET reported_at = max(reported_at, excluded.reported_at)`,
  );
  for (const [reporterId, at] of newest) keep.run(reporterId, ipText, at);
}
