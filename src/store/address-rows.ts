// An `addresses` row as the reputation index keeps it. The same columns exist in the main database and in a
// snapshot, so the server, the offline commands and the snapshot reader all read rows through this.

import { categoryBit, type Category } from "../domain/categories";
import type { AddressRecord } from "../index/reputation-index";
import type { Database } from "bun:sqlite";
import type { Store } from "./database";

export interface AddressRow {
  ip: string;
  score: number;
  total: number;
  verified: number;
  mask: number;
  lastCategory: string | null;
  firstSeen: number | null;
  lastSeen: number | null;
}

export const ADDRESS_ROW_COLUMNS = `ip, reputation_score AS score, total_reports AS total, verified_reports AS verified,
  categories_mask AS mask, last_category AS lastCategory, first_seen AS firstSeen, last_seen AS lastSeen`;

export function recordOfRow(row: AddressRow): AddressRecord {
  return {
    reputationScore: row.score,
    totalReports: row.total,
    verifiedReports: row.verified,
    categoriesMask: row.mask,
    lastCategoryBit: row.lastCategory ? categoryBit(row.lastCategory as Category) : -1,
    firstSeenMs: row.firstSeen ?? Number.NaN,
    lastSeenMs: row.lastSeen ?? Number.NaN,
  };
}

export interface ScoredRow extends AddressRow {
  scoredAt: number;
  /** When the rescore job is to score the row again (its score or risk level moves then); null: never. */
  rescoreDueAt: number | null;
}

/** Every `addresses` row with the time it was scored at and its due time, for comparing it with a fresh score (doctor). */
export function* scoredRows(sqlite: Database): Generator<ScoredRow> {
  yield* sqlite.prepare<ScoredRow, []>(`SELECT ${ADDRESS_ROW_COLUMNS}, scored_at AS scoredAt, rescore_due_at AS rescoreDueAt FROM addresses`).iterate();
}

/**
 * Which of the addresses have a row in `addresses` (their reports count, or a feed lists them and they were
 * scored), in one statement: a feed's addresses are asked about by the hundred thousand (a refresh of a
 * 200,000-line feed: 195 ms, where a statement per address took 245).
 */
export function addressRowsAmong(store: Store): (ipTexts: readonly string[]) => Set<string> {
  return addressRowsAmongIn(store.sqlite);
}

/** addressRowsAmong for any database holding the `addresses` table (the store, a snapshot, one being written). */
export function addressRowsAmongIn(db: Database): (ipTexts: readonly string[]) => Set<string> {
  const select = db.prepare<{ ip: string }, [string]>("SELECT ip FROM main.addresses WHERE ip IN (SELECT value FROM json_each(?))");
  return (ipTexts) => {
    const found = new Set<string>();
    if (ipTexts.length === 0) return found;
    for (const row of select.iterate(JSON.stringify(ipTexts))) found.add(row.ip);
    return found;
  };
}

/** The rows whose score time has moved (rescore_due_at passed), oldest due first: a prepared reader. */
export function dueForRescore(store: Store): { all(nowMs: number, limit: number): { ip: string; score: number }[]; any(nowMs: number): boolean } {
  const due = store.sqlite.prepare<{ ip: string; score: number }, [number, number]>(
    `SELECT ip, reputation_score AS score FROM addresses
      WHERE rescore_due_at IS NOT NULL AND rescore_due_at <= ?
      ORDER BY rescore_due_at, ip LIMIT ?`,
  );
  return { all: (nowMs, limit) => due.all(nowMs, limit), any: (nowMs) => due.get(nowMs, 1) !== null };
}

/** A row of the recent list: the address and its last report time. */
export interface RecentRowKey {
  ip: string;
  lastSeenMs: number | null;
}

/**
 * How many addresses have a row, and a page of them, most recently reported first, then by address (GET
 * /v1/ip/recent): `offset` rows skipped, or those up to `after` (a keyset cursor) passed over through the
 * (last_seen DESC, ip) index in three range reads: the rest of `after`'s time, the older times, the rows with none.
 */
export function recentAddresses(store: Store, limit: number, offset: number, after: RecentRowKey | null = null): { total: number; rows: RecentRowKey[] } {
  const total = (store.sqlite.query("SELECT count(*) AS n FROM addresses").get() as { n: number }).n;
  const select = "SELECT ip, last_seen AS lastSeenMs FROM addresses";
  if (after === null) {
    return { total, rows: store.sqlite.query(`${select} ORDER BY last_seen DESC, ip ASC LIMIT ? OFFSET ?`).all(limit, offset) as RecentRowKey[] };
  }
  const rows: RecentRowKey[] = [];
  const more = (sql: string, ...args: (string | number)[]) => {
    if (rows.length < limit) rows.push(...(store.sqlite.query(sql).all(...args, limit - rows.length) as RecentRowKey[]));
  };
  if (after.lastSeenMs === null) {
    more(`${select} WHERE last_seen IS NULL AND ip > ? ORDER BY last_seen DESC, ip ASC LIMIT ?`, after.ip);
  } else {
    more(`${select} WHERE last_seen = ? AND ip > ? ORDER BY last_seen DESC, ip ASC LIMIT ?`, after.lastSeenMs, after.ip);
    more(`${select} WHERE last_seen < ? ORDER BY last_seen DESC, ip ASC LIMIT ?`, after.lastSeenMs);
    more(`${select} WHERE last_seen IS NULL ORDER BY last_seen DESC, ip ASC LIMIT ?`);
  }
  return { total, rows };
}

/**
 * Writes an address's row (insert or update) or deletes it: what the scorer stores after rescoring. `upsert.run`
 * takes ip, version, score, total, verified, mask, lastCategory, firstSeen, lastSeen, scoredAt, rescoreDueAt.
 */
/** An address row written whole (insert or replace its scored columns), bound by position in this order. */
const ADDRESS_UPSERT_SQL = `INSERT INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask,
                            last_category, first_seen, last_seen, scored_at, rescore_due_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(ip) DO UPDATE SET
       reputation_score = excluded.reputation_score, total_reports = excluded.total_reports,
       verified_reports = excluded.verified_reports, categories_mask = excluded.categories_mask,
       last_category = excluded.last_category, first_seen = excluded.first_seen, last_seen = excluded.last_seen,
       scored_at = excluded.scored_at, rescore_due_at = excluded.rescore_due_at`;

/** The parameters of ADDRESS_UPSERT_SQL. */
type AddressUpsertParams = [string, number, number, number, number, number, string | null, number | null, number | null, number, number | null];

export function addressWriter(store: Pick<Store, "sqlite">) {
  const upsert = store.sqlite.prepare<never, AddressUpsertParams>(ADDRESS_UPSERT_SQL);
  const remove = store.sqlite.prepare(`DELETE FROM addresses WHERE ip = ?`);
  return { upsert, remove };
}

/** The change log the `addresses` triggers write, and the row of an address: what the index follows. */
export function addressChangeLog(store: Pick<Store, "sqlite">) {
  return {
    /** Up to `limit` entries after `seq`, oldest first. */
    since: store.sqlite.prepare<{ seq: number; ip: string }, [number, number]>("SELECT seq, ip FROM address_change_log WHERE seq > ? ORDER BY seq LIMIT ?"),
    address: store.sqlite.prepare<AddressRow, [string]>(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses WHERE ip = ?`),
    /** Deletes the entries up to `seq`, at most `limit` of them (the oldest): a long log goes in several calls. */
    prune: store.sqlite.prepare<unknown, [number, number]>(
      "DELETE FROM address_change_log WHERE seq <= min(?, (SELECT min(seq) FROM address_change_log) + ? - 1)",
    ),
  };
}

/**
 * Every address row, with the change log's position read in the same transaction, so the rows and the position
 * agree: `visit(lastSeq, rows)` runs inside it.
 */
export function readAllAddresses(store: Pick<Store, "sqlite">, visit: (lastSeq: number, rows: Iterable<AddressRow>) => void): void {
  store.sqlite.transaction(() => {
    const max = store.sqlite.query("SELECT coalesce(max(seq), 0) AS seq FROM address_change_log").get() as { seq: number };
    visit(max.seq, store.sqlite.prepare<AddressRow, []>(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses`).iterate());
  })();
}
