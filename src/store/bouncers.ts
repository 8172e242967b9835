// The bouncers and their decision cursors (contract 14): one module for both tables, which change together.

import { type Store, inTransaction } from "./database";
import { alignedCopy } from "./decision-journal";

export type BouncerMode = "nftables" | "ipset" | "iptables";

export interface BouncerRow {
  name: string;
  apiKeyId: number;
  minimumRisk: string;
  categories: string | null;
  mode: BouncerMode;
  durationSeconds: number;
  createdAt: number;
  lastMetricsAt: number | null;
}

/** Entries that entered a journal in (fromSeq, toSeq], last sent to the bouncer at sentAtSeconds. */
export type RefreshBatch = [sentAtSeconds: number, fromSeq: number, toSeq: number];

/** What a bouncer holds: the journal it follows and the sequence number of the list it was last sent whole. */
export interface CursorRow {
  lastPullAt: number;
  /** Null: a cursor written before the journal (`legacy` holds what it was sent), or emptied. */
  filterKey: string | null;
  seq: number;
  /** When what it holds was sent, oldest first: the head is the next to need sending again. */
  refreshQueue: RefreshBatch[];
  /** A cursor written before the journal: the ids it was sent. */
  legacy: { ids: Float64Array; v6Values: Record<string, string> } | null;
}

/**
 * What a save of a cursor drops (services/bouncers decides the numbers): the owner's other cursors beyond its
 * `perOwner` most recently pulled, and every cursor last pulled at or before `idleSince` (idle).
 */
export interface CursorLimits {
  perOwner: number;
  idleSince: number;
}

export interface PullView {
  apiKeyId: number;
  clientAddress: string;
  lastPullAt: number;
}

const BOUNCER_COLUMNS = `name, api_key_id AS apiKeyId, minimum_risk AS minimumRisk, categories, mode,
  duration_seconds AS durationSeconds, created_at AS createdAt, last_metrics_at AS lastMetricsAt`;

export class BouncerTables {
  private readonly stmt;

  constructor(private readonly store: Store) {
    const db = store.sqlite;
    this.stmt = {
      insert: db.prepare<unknown, [string, number, string, string | null, string, number, number]>(
        "INSERT INTO bouncers (name, api_key_id, minimum_risk, categories, mode, duration_seconds, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      all: db.prepare<BouncerRow, []>(`SELECT ${BOUNCER_COLUMNS} FROM bouncers ORDER BY name`),
      byName: db.prepare<BouncerRow, [string]>(`SELECT ${BOUNCER_COLUMNS} FROM bouncers WHERE name = ?`),
      byKey: db.prepare<BouncerRow, [number]>(`SELECT ${BOUNCER_COLUMNS} FROM bouncers WHERE api_key_id = ?`),
      remove: db.prepare<unknown, [string]>("DELETE FROM bouncers WHERE name = ?"),
      noteMetrics: db.prepare<unknown, [number, number]>("UPDATE bouncers SET last_metrics_at = ? WHERE api_key_id = ?"),
      cursor: db.prepare<CursorColumns, [number, string]>(
        `SELECT ${CURSOR_COLUMNS} FROM decision_cursors WHERE api_key_id = ? AND client_address = ?`,
      ),
      // Replaced, not updated: the row gets a new rowid, which orders the cursors by when they were saved.
      saveCursor: db.prepare<unknown, [number, string, number, string | null, number, string]>(
        `INSERT OR REPLACE INTO decision_cursors (api_key_id, client_address, last_pull_at, ids, sent_at, v6_values, filter_key, seq, refresh_queue)
         VALUES (?, ?, ?, x'', x'', '{}', ?, ?, ?)`,
      ),
      // An idle cursor is emptied rather than deleted: its row still tells `bouncer list` the last pull.
      emptyIdleCursors: db.prepare<unknown, [number]>(
        `UPDATE decision_cursors SET ids = x'', sent_at = x'', v6_values = '{}', filter_key = NULL, seq = NULL, refresh_queue = NULL
         WHERE last_pull_at <= ? AND (filter_key IS NOT NULL OR length(ids) > 0)`,
      ),
      // The most recently saved by rowid, not by last_pull_at: after the clock steps back, the wall-clock times
      // would make the bouncer that pulled last look the oldest.
      dropOtherCursorsBeyond: db.prepare<unknown, [number, string, number]>(
        `DELETE FROM decision_cursors WHERE api_key_id = ?1 AND client_address <> ?2 AND client_address NOT IN (
           SELECT client_address FROM decision_cursors WHERE api_key_id = ?1 AND client_address <> ?2 ORDER BY rowid DESC LIMIT ?3)`,
      ),
      removeCursors: db.prepare<unknown, [number]>("DELETE FROM decision_cursors WHERE api_key_id = ?"),
      pulls: db.prepare<PullView, []>("SELECT api_key_id AS apiKeyId, client_address AS clientAddress, last_pull_at AS lastPullAt FROM decision_cursors ORDER BY last_pull_at DESC"),
    };
  }

  insert(row: Omit<BouncerRow, "lastMetricsAt">): void {
    this.stmt.insert.run(row.name, row.apiKeyId, row.minimumRisk, row.categories, row.mode, row.durationSeconds, row.createdAt);
  }

  list(): BouncerRow[] {
    return this.stmt.all.all();
  }

  byName(name: string): BouncerRow | null {
    return this.stmt.byName.get(name) ?? null;
  }

  byKey(apiKeyId: number): BouncerRow | null {
    return this.stmt.byKey.get(apiKeyId) ?? null;
  }

  /** Removes a bouncer and its cursors. Call inside a transaction with the key's revocation. */
  remove(row: BouncerRow): void {
    this.stmt.removeCursors.run(row.apiKeyId);
    this.stmt.remove.run(row.name);
  }

  noteMetrics(apiKeyId: number, atMs: number): void {
    this.stmt.noteMetrics.run(atMs, apiKeyId);
  }

  cursor(apiKeyId: number, clientAddress: string): CursorRow | null {
    const row = this.stmt.cursor.get(apiKeyId, clientAddress);
    return row ? cursorOfColumns(row) : null;
  }

  /** Commits what a bouncer was just sent whole, dropping what `limits` say (idle cursors: emptied). */
  saveCursor(apiKeyId: number, clientAddress: string, cursor: CursorRow, limits: CursorLimits): void {
    const c = cursorColumns(cursor);
    inTransaction(this.store, () => {
      this.stmt.emptyIdleCursors.run(limits.idleSince);
      this.stmt.dropOtherCursorsBeyond.run(apiKeyId, clientAddress, limits.perOwner - 1);
      this.stmt.saveCursor.run(apiKeyId, clientAddress, c.lastPullAt, c.filterKey, c.seq, c.refreshQueue);
    });
  }

  /** Every cursor's last pull, newest first. */
  pulls(): PullView[] {
    // A cursor of a pull narrowed by scopes or scenarios is kept under "<address> <what it asked>".
    return this.stmt.pulls.all().map((p) => ({ ...p, clientAddress: p.clientAddress.split(" ")[0] }));
  }
}

/**
 * The columns of a cursor as CursorColumns reads them (the server's table and an edge's file share them). The ids
 * of a cursor written before the journal are read only when it has no journal: a pull reads a small row.
 */
export const CURSOR_COLUMNS = `last_pull_at AS lastPullAt, filter_key AS filterKey, seq, refresh_queue AS refreshQueue,
  CASE WHEN filter_key IS NULL THEN ids END AS ids, CASE WHEN filter_key IS NULL THEN v6_values END AS v6Values`;

export interface CursorColumns {
  lastPullAt: number;
  filterKey: string | null;
  seq: number | null;
  refreshQueue: string | null;
  ids: Uint8Array | null;
  v6Values: string | null;
}

/** A cursor as its columns store it (the legacy columns are emptied once it follows a journal). */
export function cursorColumns(cursor: CursorRow): { lastPullAt: number; filterKey: string | null; seq: number; refreshQueue: string } {
  return { lastPullAt: cursor.lastPullAt, filterKey: cursor.filterKey, seq: cursor.seq, refreshQueue: JSON.stringify(cursor.refreshQueue) };
}

export function cursorOfColumns(row: CursorColumns): CursorRow {
  const legacy =
    row.filterKey === null && row.ids !== null && row.ids.byteLength > 0
      ? { ids: new Float64Array(alignedCopy(row.ids).buffer), v6Values: JSON.parse(row.v6Values ?? "{}") as Record<string, string> }
      : null;
  return {
    lastPullAt: row.lastPullAt,
    filterKey: row.filterKey,
    seq: row.seq ?? 0,
    refreshQueue: row.refreshQueue === null ? [] : (JSON.parse(row.refreshQueue) as RefreshBatch[]),
    legacy,
  };
}
