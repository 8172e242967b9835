// The `threats` table and the reports threat detection reads (contract section 9). Listing is prepared at once;
// detection's statements only when it first runs (a read-only snapshot store has threats but no reports).

import type { Database } from "bun:sqlite";
import type { ThreatKind } from "../domain/webhook-payload";
import { DATED_AFTER_SQL, NEWEST_REPORT_ID_SQL } from "./reports";

export interface ThreatRow {
  id: number;
  kind: ThreatKind;
  patternKey: string;
  cidr: string | null;
  asn: number | null;
  category: string | null;
  ipCount: number;
  addresses: string;
  windowStart: number;
  windowEnd: number;
  detectedAt: number;
}

export interface ThreatReportRow {
  id: number;
  ip: string;
  category: string;
  createdAt: number;
}

/** Listing the stored threats, newest first. */
export function threatListingStatements(sqlite: Database) {
  return {
    page: sqlite.prepare<ThreatRow, [number, number]>(
      `SELECT id, kind, pattern_key AS patternKey, cidr, asn, category, ip_count AS ipCount, addresses,
              window_start AS windowStart, window_end AS windowEnd, detected_at AS detectedAt
         FROM threats ORDER BY detected_at DESC, id DESC LIMIT ? OFFSET ?`,
    ),
    count: sqlite.prepare<{ n: number }, []>("SELECT count(*) AS n FROM threats"),
  };
}

/** Detection: the window's counting reports, rejections, the repeat check, the row, and the lowest score. */
export function detectionStatements(sqlite: Database) {
  return {
    // Both read a chunk at a time, after a cursor, up to a fixed newest id (see ThreatService.detect).
    // The window's reports in the order of the created_at index: after (created_at, id), through created_at and id.
    recent: sqlite.prepare<ThreatReportRow, [number, number, number, number, number]>(
      `SELECT id, ip, category, created_at AS createdAt FROM reports INDEXED BY reports_created
        WHERE (created_at, id) > (?, ?) AND created_at <= ? AND id <= ? AND +status IN ('pending', 'verified')
        ORDER BY created_at, id LIMIT ?`,
    ),
    // Reports stored after an id, through an id. The unary `+` keeps SQLite on the id range, not an index.
    storedSince: sqlite.prepare<ThreatReportRow, [number, number, number, number, number]>(
      `SELECT id, ip, category, created_at AS createdAt FROM reports
        WHERE id > ? AND id <= ? AND +created_at >= ? AND +created_at <= ? AND +status IN ('pending', 'verified')
        ORDER BY id LIMIT ?`,
    ),
    datedSince: sqlite.prepare<ThreatReportRow, [number, number, number]>(
      `SELECT id, ip, category, created_at AS createdAt FROM reports
        WHERE created_at > ? AND created_at <= ? AND id <= ? AND +status IN ('pending', 'verified')`,
    ),
    rejected: sqlite.prepare<{ id: number }, [number, number]>(
      "SELECT id FROM reports WHERE status = 'rejected' AND created_at >= ? AND created_at <= ?",
    ),
    lastId: sqlite.prepare<{ id: number }, []>(NEWEST_REPORT_ID_SQL),
    datedAfter: sqlite.prepare<{ found: number }, [number, number]>(DATED_AFTER_SQL),
    detectedSince: sqlite.prepare<{ id: number }, [string, number]>("SELECT id FROM threats WHERE pattern_key = ? AND detected_at > ? LIMIT 1"),
    insert: sqlite.prepare<{ id: number }, [string, string, string, number | null, string | null, number, string, number, number, number]>(
      `INSERT INTO threats (kind, pattern_key, cidr, asn, category, ip_count, addresses, window_start, window_end, detected_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ),
    lowestScore: sqlite.prepare<{ score: number | null }, [string]>(
      "SELECT min(reputation_score) AS score FROM addresses WHERE ip IN (SELECT value FROM json_each(?))",
    ),
  };
}

export type DetectionStatements = ReturnType<typeof detectionStatements>;
