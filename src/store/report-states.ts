// The SQL of report states (contract 5.5): one report with its transitions, status changes, the community
// verification's groups and cursor, and retention.

import type { Database } from "bun:sqlite";
import type { ReportStatus } from "../domain/scoring";
import { DATED_AFTER_SQL, NEWEST_REPORT_ID_SQL, type ReportSource } from "./reports";

export interface ReportRow {
  id: number;
  ip: string;
  reporterId: number;
  category: string;
  severity: number;
  description: string;
  evidence: string | null;
  status: ReportStatus;
  source: ReportSource;
  createdAt: number;
  statusChangedAt: number;
}

/** A counting report of a community-verification group. */
export interface GroupReportRow {
  id: number;
  reporterId: number;
  status: string;
  createdAt: number;
  source: ReportSource;
}

/** The prepared statements, made once per connection. */
export function reportStateStatements(sqlite: Database) {
  return {
    report: sqlite.prepare<ReportRow, [number]>(
      `SELECT id, ip, reporter_id AS reporterId, category, severity, description, evidence, status, source,
              created_at AS createdAt, status_changed_at AS statusChangedAt
         FROM reports WHERE id = ?`,
    ),
    transitions: sqlite.prepare<
      { fromStatus: ReportStatus | null; toStatus: ReportStatus; at: number; actorUserId: number | null; reason: string | null },
      [number]
    >(
      `SELECT from_status AS fromStatus, to_status AS toStatus, at, actor_user_id AS actorUserId, reason
         FROM report_transitions WHERE report_id = ? ORDER BY id`,
    ),
    setStatus: sqlite.prepare<never, [string, number, number]>("UPDATE reports SET status = ?, status_changed_at = ? WHERE id = ?"),
    insertTransition: sqlite.prepare<never, [number, string, string, number, number | null, string | null]>(
      "INSERT INTO report_transitions (report_id, from_status, to_status, at, actor_user_id, reason) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    // Groups with ≥ 3 distinct reporters among their counting reports created from the first bound on (14 days: a
    // span reaching the last 7 days may start 7 days before them) and a pending one left.
    communityGroups: sqlite.prepare<{ ip: string; category: string }, [number, number, number]>(
      `SELECT ip, category FROM reports
        WHERE status IN ('pending', 'verified') AND created_at >= ? AND created_at <= ?
        GROUP BY ip, category
       HAVING count(DISTINCT reporter_id) >= ? AND sum(status = 'pending') > 0
        ORDER BY ip, category`,
    ),
    // The groups that can have become eligible since a scan: those with a report stored after it (any
    // process, any report date; up to an id, a step at a time) or dated after it (stored earlier with a later
    // clock). The unary `+` keeps
    // SQLite on the id range and the created_at index, not a week of the status index.
    candidateGroups: sqlite.prepare<{ ip: string; category: string }, [number, number, number, number, number, number]>(
      `SELECT ip, category FROM reports
        WHERE id > ? AND id <= ? AND +status IN ('pending', 'verified') AND +created_at >= ? AND +created_at <= ?
       UNION
       SELECT ip, category FROM reports
        WHERE created_at > ? AND created_at <= ? AND +status IN ('pending', 'verified')
        ORDER BY ip, category`,
    ),
    // A page of a group's counting reports created up to a time, oldest first, after a (created_at, id) position,
    // through the (ip, created_at) index: what community verification slides its 7-day span over, read a page a
    // turn (a flooded group has 100,000s).
    groupReportsPage: sqlite.prepare<GroupReportRow, [string, string, number, number, number, number]>(
      `SELECT id, reporter_id AS reporterId, status, created_at AS createdAt, source FROM reports
        WHERE ip = ?1 AND category = ?2 AND created_at >= ?3 AND created_at <= ?5 AND (created_at > ?3 OR id > ?4)
          AND status IN ('pending', 'verified')
        ORDER BY created_at, id LIMIT ?6`,
    ),
    // Sets a report verified only while it is still pending (an admin may have rejected it since it was read).
    verifyIfPending: sqlite.prepare<never, [number, number]>("UPDATE reports SET status = 'verified', status_changed_at = ? WHERE id = ? AND status = 'pending'"),
    lastReportId: sqlite.prepare<{ id: number }, []>(NEWEST_REPORT_ID_SQL),
    datedAfter: sqlite.prepare<{ found: number }, [number, number]>(DATED_AFTER_SQL),
    readCursor: sqlite.prepare<{ value: string }, [string]>("SELECT value FROM meta WHERE key = ?"),
    writeCursor: sqlite.prepare<never, [string, string]>(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ),
    pastRetention: sqlite.prepare<{ id: number; ip: string; status: ReportStatus }, [number, number]>(
      `SELECT id, ip, status FROM reports
        WHERE status IN ('pending', 'verified', 'rejected') AND created_at < ?
        ORDER BY id LIMIT ?`,
    ),
  };
}
