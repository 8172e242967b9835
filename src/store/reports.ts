// The `reports` and `report_transitions` tables as report intake writes them (contract 5.4): the 15-minute
// duplicate check, a report with its first transition, and the savepoint that keeps one refused report from
// undoing the rest of its batch.

import type { Database } from "bun:sqlite";
import type { Store } from "./database";

/** Where a report came from (the `reports.source` column). */
export type ReportSource = "api" | "abuseipdb" | "import";

/** The prepared statements, made once per connection. */
export function reportIntakeStatements(sqlite: Database) {
  return {
    // For each [reporterId, ip] of the JSON array ?1, in its order: the reporter's last report of the address
    // after ?2 (or null), each through the (reporter_id, ip, created_at) index, a deleted one included
    // (cleared_report_times, see report-deletions.ts).
    lastReportsAt: sqlite.prepare<{ last: number | null }, [string, number]>(
      `SELECT (SELECT max(t) FROM (SELECT max(created_at) AS t FROM reports r
                                    WHERE r.reporter_id = j.value ->> 0 AND r.ip = j.value ->> 1 AND r.created_at > ?2
                                   UNION ALL
                                   SELECT reported_at FROM cleared_report_times c
                                    WHERE c.reporter_id = j.value ->> 0 AND c.ip = j.value ->> 1 AND c.reported_at > ?2)) AS last
         FROM json_each(?1) j ORDER BY j.key`,
    ),
    insertReport: sqlite.prepare<never, [string, number, number, string, number, string, string | null, string, number, number]>(
      `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, evidence, status, source,
                            created_at, status_changed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
    ),
    insertTransition: sqlite.prepare<never, [number, number, number, string]>(
      "INSERT INTO report_transitions (report_id, from_status, to_status, at, actor_user_id, reason) VALUES (?, NULL, 'pending', ?, ?, ?)",
    ),
    savepoint: sqlite.prepare("SAVEPOINT report_write"),
    release: sqlite.prepare("RELEASE report_write"),
    rollbackTo: sqlite.prepare("ROLLBACK TO report_write"),
  };
}

/** The reports of an address that can count at a time: `?1` the address, `?2` the retention cutoff. */
export function countingReportsSql(table = "reports"): string {
  return `SELECT id, reporter_id AS reporterId, severity, created_at AS createdAtMs, status, category
            FROM ${table}
           WHERE ip = ? AND status IN ('pending', 'verified') AND created_at >= ?`;
}

export interface CountingReportRow {
  id: number;
  reporterId: number;
  severity: number;
  createdAtMs: number;
  status: string;
  category: string;
}

/** The statements of `import reports`: reports (status pending, source import) with their first transition. */
export function importStatements(sqlite: Database) {
  return {
    insertReport: sqlite.prepare<never, [string, number, number, string, number, string, number, number]>(
      `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, evidence, status, source,
                            created_at, status_changed_at)
       VALUES (?, ?, ?, ?, ?, ?, NULL, 'pending', 'import', ?, ?)`,
    ),
    insertTransition: sqlite.prepare<never, [number, number, number]>(
      "INSERT INTO report_transitions (report_id, from_status, to_status, at, actor_user_id, reason) VALUES (?, NULL, 'pending', ?, ?, 'import')",
    ),
  };
}

/** The newest report's id (0 with none): where a pass that reads up to "now" stops. */
export const NEWEST_REPORT_ID_SQL = "SELECT coalesce(max(id), 0) AS id FROM reports";

/**
 * Whether a report up to an id is dated after a time (a clock ahead): the jobs that read reports since their last
 * pass look at those dated since only when one was. Through the created_at index: it reads only such reports.
 */
export const DATED_AFTER_SQL = "SELECT 1 AS found FROM reports WHERE created_at > ? AND id <= ? LIMIT 1";
