// Writing a snapshot file (contract section 8): a connection of its own to the new file, with the main database
// ATTACHed as `src` and only read. Its one transaction is the one read transaction of the store, so while the
// server keeps writing (WAL) the copy sees one consistent moment. Tables are copied column by column from the
// lists named here, never whole: no users, keys, webhooks, report texts, allowlist notes or reporter ids.

import { Database } from "bun:sqlite";
import { randomUUID } from "node:crypto";
import { ADDRESS_ROW_COLUMNS, type AddressRow, addressRowsAmongIn } from "./address-rows";
import type { Store } from "./database";
import { readListings } from "./feeds";
import { type CountingReportRow, countingReportsSql } from "./reports";
import { SNAPSHOT_INDEXES, SNAPSHOT_SCHEMA } from "./snapshot-format";

/** Rows copied between two yields to the event loop. */
export const BATCH_ROWS = 25_000;
/** Page cache of the export's connection and of the attached store (KiB). */
export const CACHE_KIB = 256 * 1024;
const PAGE_SIZE = 65_536;
export const INSTANCE_ID_KEY = "instance_id";

/** The random id of this installation, created in the main database's `meta` table on first use. */
export function instanceIdOf(store: Store): string {
  try {
    store.sqlite.query("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)").run(INSTANCE_ID_KEY, randomUUID());
  } catch {
    // A read-only store: an id written earlier is still read below.
  }
  const row = store.sqlite.query("SELECT value FROM meta WHERE key = ?").get(INSTANCE_ID_KEY) as { value: string } | null;
  return row?.value ?? "unknown";
}

/** Copies an in-memory store (tests) to a file, so another connection can attach it. */
export function copyStoreToFile(store: Store, path: string): void {
  store.sqlite.query("VACUUM INTO ?").run(path);
}

export interface RescoredRow extends AddressRow {
  scoredAt: number;
}

export class SnapshotWriter {
  readonly db: Database;

  /** Creates the file with its schema and attaches `sourcePath` as `src`; the read transaction is not begun yet. */
  constructor(path: string, sourcePath: string) {
    this.db = new Database(path, { create: true, readwrite: true });
    const db = this.db;
    db.exec(`PRAGMA main.page_size = ${PAGE_SIZE}`);
    db.exec("PRAGMA main.journal_mode = OFF");
    db.exec("PRAGMA main.synchronous = OFF");
    db.exec(`PRAGMA main.cache_size = ${-CACHE_KIB}`);
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec(SNAPSHOT_SCHEMA);
    db.query("ATTACH DATABASE ? AS src").run(sourcePath);
    db.exec(`PRAGMA src.cache_size = ${-CACHE_KIB}`);
  }

  /** The one read transaction of the store: every statement until `finishCopy` sees one moment of it. */
  beginCopy(): void {
    this.db.exec("BEGIN");
  }

  /** Copies the `addresses` rows in batches of BATCH_ROWS, calling `between` after each (to yield). */
  async copyAddresses(between: () => Promise<void>): Promise<void> {
    const batchEnd = this.db.prepare<{ last: number | null }, [number]>(
      `SELECT max(rowid) AS last FROM (SELECT rowid FROM src.addresses WHERE rowid > ? ORDER BY rowid LIMIT ${BATCH_ROWS})`,
    );
    const copyBatch = this.db.prepare(
      `INSERT INTO main.addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
                                   first_seen, last_seen, scored_at)
       SELECT ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
              first_seen, last_seen, scored_at
         FROM src.addresses WHERE rowid > ? AND rowid <= ?`,
    );
    for (let after = 0; ; ) {
      const last = batchEnd.get(after)?.last ?? null;
      if (last === null) break;
      copyBatch.run(after, last);
      after = last;
      await between();
    }
  }

  /** Copies the allowlist (networks only: no notes, no authors), threats and feeds with their entries. */
  copyTables(): { allowlist: number; threats: number; feeds: number; networks: number } {
    const copy = (columns: string, table: string, order: string) =>
      this.db.prepare(`INSERT INTO main.${table} (${columns}) SELECT ${columns} FROM src.${table} ORDER BY ${order}`).run().changes;
    return {
      allowlist: copy("id, cidr, created_at", "allowlist", "id"),
      threats: copy("id, kind, pattern_key, cidr, asn, category, ip_count, addresses, window_start, window_end, detected_at", "threats", "id"),
      feeds: copy("name, category, severity, entry_count, updated_at", "feeds", "name"),
      networks: copy("feed_name, cidr, ip_version, prefix_length, created_at", "feed_entries", "feed_name, cidr"),
    };
  }

  /** The feeds and entries copied. */
  listings() {
    return readListings(this.db);
  }

  /** Copied rows whose oldest counting report is before `cutoffMs` (past retention). */
  addressesFirstSeenBefore(cutoffMs: number): AddressRow[] {
    return this.db.prepare<AddressRow, [number]>(`SELECT ${ADDRESS_ROW_COLUMNS} FROM main.addresses WHERE first_seen < ?`).all(cutoffMs);
  }

  /** Rescoring copied rows from the store's reports: the reader of counting reports, and the two writers. */
  rescorer() {
    return {
      countingReports: this.db.prepare<CountingReportRow, [string, number]>(countingReportsSql("src.reports")),
      update: this.db.prepare<unknown, [number, number, number, number, string | null, number | null, number | null, number, string]>(
        `UPDATE main.addresses SET reputation_score = ?, total_reports = ?, verified_reports = ?, categories_mask = ?, last_category = ?,
                                   first_seen = ?, last_seen = ?, scored_at = ? WHERE ip = ?`,
      ),
      remove: this.db.prepare<unknown, [string]>("DELETE FROM main.addresses WHERE ip = ?"),
    };
  }

  /** Every copied address row, by address. */
  addressRows(): IterableIterator<AddressRow> {
    return this.db.query(`SELECT ${ADDRESS_ROW_COLUMNS} FROM main.addresses ORDER BY ip`).iterate() as IterableIterator<AddressRow>;
  }

  /** Which of the copied addresses have a row (addressRowsAmong). */
  rowsAmong(): (ipTexts: readonly string[]) => Set<string> {
    return addressRowsAmongIn(this.db);
  }

  insertIndexBlobs(blobs: readonly { name: string; type: string; bytes: Uint8Array }[]): void {
    const insert = this.db.prepare("INSERT INTO main.index_data (position, name, type, bytes) VALUES (?, ?, ?, ?)");
    blobs.forEach((blob, position) => insert.run(position, blob.name, blob.type, blob.bytes));
  }

  /** Builds the snapshot's indexes, commits, and lets go of the store. */
  finishCopy(): void {
    this.db.exec(SNAPSHOT_INDEXES);
    this.db.exec("COMMIT");
    this.db.exec("DETACH DATABASE src");
  }

  insertRangeTable(position: number, name: string, bytes: Uint8Array): void {
    this.db.query("INSERT INTO range_tables (position, name, bytes) VALUES (?, ?, ?)").run(position, name, bytes);
  }

  insertMeta(entries: readonly [string, string][]): void {
    const insert = this.db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    for (const [key, value] of entries) insert.run(key, value);
  }

  close(): void {
    this.db.close();
  }

  /** After a failure: rolls back what is open and closes; the caller removes the file. */
  abandon(): void {
    try {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      this.db.close();
    } catch {
      // already closed
    }
  }
}
