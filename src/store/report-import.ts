// The SQL of `import reports` beyond the per-report inserts (store/reports.ts `importStatements`): the import's
// own transaction, which may stay open while the file is still being read; the secondary indexes of `reports`
// dropped for a large import and built again, by sorting, before the commit; the first transitions of all the
// imported reports in one statement; and the imported addresses with their counting reports in address order.

import type { Database } from "bun:sqlite";
import { NEWEST_REPORT_ID_SQL } from "./reports";

/** The index of `reports` on (ip, created_at): the importer builds it first and reads the addresses from it. */
export const ADDRESS_INDEX = "reports_ip_created";

/** One row of `reportsByAddress`. */
export interface AddressIndexRow {
  ip: string;
  createdAtMs: number;
  id: number;
}

/** Reports per `insertReports` statement: one statement for many rows costs less than a statement per row. */
export const REPORTS_PER_INSERT = 16;

export interface SavedIndex {
  name: string;
  sql: string;
}

export function reportImportStatements(sqlite: Database) {
  return {
    begin: () => sqlite.exec("BEGIN IMMEDIATE"),
    commit: () => sqlite.exec("COMMIT"),
    rollback: () => {
      if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
    },
    /** The page cache in KiB (SQLite's negative cache_size), and setting it. */
    cacheKib: (): number => {
      const { cache_size } = sqlite.query("PRAGMA cache_size").get() as { cache_size: number };
      return cache_size < 0 ? -cache_size : cache_size * 4;
    },
    setCacheKib: (kib: number) => sqlite.exec(`PRAGMA cache_size = -${Math.max(1, Math.floor(kib))}`),
    /** The highest report id so far: the import's reports are the ones above it. */
    lastReportId: (): number => (sqlite.query(NEWEST_REPORT_ID_SQL).get() as { id: number }).id,
    reportCount: (): number => (sqlite.query("SELECT count(*) AS n FROM reports").get() as { n: number }).n,
    /** Drops the secondary indexes of `reports` and returns their definitions, to be run again by `restore`. */
    dropReportIndexes: (): SavedIndex[] => dropSchemaObjects(sqlite, "reports", ["index"]),
    /**
     * Drops the secondary indexes of `addresses` and its triggers (which log every change to
     * `address_change_log`: the caller then logs the changes itself with `logAddressChanges`).
     */
    dropAddressIndexesAndTriggers: (): SavedIndex[] => dropSchemaObjects(sqlite, "addresses", ["index", "trigger"]),
    restore: (object: SavedIndex) => sqlite.exec(object.sql),
    /** Logs changes of these addresses, in order, as the triggers of `addresses` would have, in one statement. */
    logAddressChanges: (() => {
      const insert = sqlite.prepare<never, [string]>("INSERT INTO address_change_log (ip) SELECT value FROM json_each(?) ORDER BY key");
      return (ips: readonly string[]) => insert.run(JSON.stringify(ips));
    })(),
    /**
     * REPORTS_PER_INSERT imported reports (status pending, source import, as store/reports.ts importStatements
     * writes one), 8 values each: ip, ip_version, reporter_id, category, severity, description, created_at,
     * status_changed_at. Their ids are consecutive, in order, up to the returned lastInsertRowid.
     */
    insertReports: sqlite.prepare<never, (string | number)[]>(
      `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, evidence, status, source, created_at, status_changed_at)
       VALUES ${Array.from({ length: REPORTS_PER_INSERT }, () => "(?, ?, ?, ?, ?, ?, NULL, 'pending', 'import', ?, ?)").join(", ")}`,
    ),
    /** The first transition (pending, by the reporter, reason import) of every report above `afterId`, in id order. */
    insertTransitionsAfter: sqlite.prepare<never, [number, number, number]>(
      `INSERT INTO report_transitions (report_id, from_status, to_status, at, actor_user_id, reason)
       SELECT id, NULL, 'pending', ?2, ?3, 'import' FROM reports WHERE id > ?1 ORDER BY id`,
    ),
    /** The distinct addresses of the reports above `afterId`. */
    addressesAfter: sqlite.prepare<{ ip: string }, [number]>("SELECT DISTINCT ip FROM reports WHERE id > ? ORDER BY ip"),
    /**
     * Every report not older than the cutoff, by address, read from the address index alone (no table access):
     * the importer knows the rest of its own reports and looks up the others with `reportById`.
     */
    reportsByAddress: sqlite.prepare<AddressIndexRow, [number]>(
      `SELECT ip, created_at AS createdAtMs, id FROM reports INDEXED BY ${ADDRESS_INDEX} WHERE created_at >= ? ORDER BY ip`,
    ),
    reportById: sqlite.prepare<{ reporterId: number; severity: number; createdAtMs: number; status: string; category: string }, [number]>(
      "SELECT reporter_id AS reporterId, severity, created_at AS createdAtMs, status, category FROM reports WHERE id = ?",
    ),
  };
}

/** Drops a table's indexes (not the automatic ones) and/or triggers; returns their definitions, indexes first. */
function dropSchemaObjects(sqlite: Database, table: string, types: ("index" | "trigger")[]): SavedIndex[] {
  const saved: (SavedIndex & { type: string })[] = [];
  for (const type of types) {
    saved.push(
      ...(sqlite
        .query("SELECT type, name, sql FROM sqlite_master WHERE type = ? AND tbl_name = ? AND sql IS NOT NULL ORDER BY name")
        .all(type, table) as (SavedIndex & { type: string })[]),
    );
  }
  for (const object of saved) sqlite.exec(`DROP ${object.type === "index" ? "INDEX" : "TRIGGER"} "${object.name.replaceAll('"', '""')}"`);
  return saved.map(({ name, sql }) => ({ name, sql }));
}
