// How many times reports were deleted from the store (gone, not rejected), counted in `meta` by the deleting
// transaction: a process that keeps reports in memory between passes (detect-threats' window) learns that some
// it holds may be gone, whichever process deleted them.

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
