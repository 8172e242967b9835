// The `feeds` and `feed_entries` tables (contract section 12): each feed's settings and refresh status, and the
// networks and addresses it lists. Statements are prepared once per store; a change writes its entries a chunk
// per transaction (services/feeds/feed-change-steps.ts), so other writers get the lock between chunks.

import type { Database } from "bun:sqlite";
import type { Store } from "./database";

export interface FeedRow {
  name: string;
  category: string;
  severity: number;
  entryCount: number;
  updatedAt: number;
  url: string | null;
  filePath: string | null;
  schedule: string | null;
  etag: string | null;
  lastModified: string | null;
  lastRefreshAt: number | null;
  lastError: string | null;
  badLines: number;
  createdAt: number;
}

export interface FeedEntryRow {
  feedName: string;
  cidr: string;
  createdAt: number;
}

const FEED_COLUMNS = `name, category, severity, entry_count AS entryCount, updated_at AS updatedAt, url, file_path AS filePath,
  schedule, etag, last_modified AS lastModified, last_refresh_at AS lastRefreshAt, last_error AS lastError,
  bad_lines AS badLines, created_at AS createdAt`;

/** In the upsert: the stored feed and the one saved have the same source, category and severity. */
const SAME_DEFINITION = `feeds.url IS excluded.url AND feeds.file_path IS excluded.file_path
  AND feeds.category = excluded.category AND feeds.severity = excluded.severity`;

export class FeedTables {
  private readonly all;
  private readonly one;
  private readonly upsertFeed;
  private readonly insertEntry;
  private readonly entriesOf;
  private readonly deleteAllEntries;
  private readonly deleteEntry;
  private readonly deleteFeed;
  private readonly allEntries;
  private readonly setStatus;
  private readonly dataVersion;
  private readonly page;
  private readonly setUnderWay;
  private readonly setFinished;

  constructor(store: Store) {
    const db = store.sqlite;
    this.all = db.prepare<FeedRow, []>(`SELECT ${FEED_COLUMNS} FROM feeds ORDER BY name`);
    this.one = db.prepare<FeedRow, [string]>(`SELECT ${FEED_COLUMNS} FROM feeds WHERE name = ?`);
    this.upsertFeed = db.prepare(
      `INSERT INTO feeds (name, category, severity, entry_count, updated_at, url, file_path, schedule, bad_lines, created_at)
       VALUES ($name, $category, $severity, $entryCount, $updatedAt, $url, $filePath, $schedule, $badLines, $updatedAt)
       ON CONFLICT(name) DO UPDATE SET category = excluded.category, severity = excluded.severity,
         entry_count = excluded.entry_count, updated_at = excluded.updated_at, url = excluded.url,
         file_path = excluded.file_path, schedule = excluded.schedule, bad_lines = excluded.bad_lines,
         -- Another source, category or severity: the last download's validators would get a 304 and keep the
         -- entries (and their listings) of the old definition, so they go, and the next refresh downloads whole.
         etag = CASE WHEN ${SAME_DEFINITION} THEN feeds.etag END,
         last_modified = CASE WHEN ${SAME_DEFINITION} THEN feeds.last_modified END`,
    );
    this.insertEntry = db.prepare<unknown, [string, string, number, number, number]>(
      `INSERT INTO feed_entries (feed_name, cidr, ip_version, prefix_length, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(feed_name, cidr) DO NOTHING`,
    );
    this.entriesOf = db.prepare<FeedEntryRow, [string]>(`SELECT feed_name AS feedName, cidr, created_at AS createdAt FROM feed_entries WHERE feed_name = ?`);
    this.deleteAllEntries = db.prepare<unknown, [string]>(`DELETE FROM feed_entries WHERE feed_name = ?`);
    this.deleteEntry = db.prepare<unknown, [string, string]>(`DELETE FROM feed_entries WHERE feed_name = ? AND cidr = ?`);
    this.deleteFeed = db.prepare<unknown, [string]>(`DELETE FROM feeds WHERE name = ?`);
    this.allEntries = db.prepare<FeedEntryRow, []>(`SELECT feed_name AS feedName, cidr, created_at AS createdAt FROM feed_entries`);
    this.setStatus = db.prepare(
      `UPDATE feeds SET last_refresh_at = $at, last_error = $error, etag = coalesce($etag, etag),
         last_modified = coalesce($lastModified, last_modified) WHERE name = $name`,
    );
    this.page = db.prepare<{ feedName: string; cidr: string }, [string, string, number]>(
      `SELECT feed_name AS feedName, cidr FROM feed_entries WHERE (feed_name, cidr) > (?, ?) ORDER BY feed_name, cidr LIMIT ?`,
    );
    // A change in steps: the validators go (a 304 must not keep a half-made list), the status says so.
    this.setUnderWay = db.prepare<unknown, [string, string]>(`UPDATE feeds SET last_error = ?, etag = NULL, last_modified = NULL WHERE name = ?`);
    this.setFinished = db.prepare<unknown, [number, string]>(`UPDATE feeds SET entry_count = ?, last_error = NULL WHERE name = ?`);
    // The definitions too (a schedule, URL or category changed by the CLI), not only the entries.
    // The entries' largest id too: two replaces of one feed in the same millisecond, with as many entries, differ
    // by it (ids only grow), where the sums alone were equal and a server following them missed the second.
    this.dataVersion = db.prepare<{ n: number; v: number; m: number; d: string }, []>(
      `SELECT count(*) AS n, coalesce(sum(updated_at), 0) + coalesce(sum(entry_count), 0) AS v, (SELECT coalesce(max(id), 0) FROM feed_entries) AS m,
              coalesce(group_concat(name || '|' || category || '|' || severity || '|' || coalesce(url, '') || '|' || coalesce(file_path, '') || '|' || coalesce(schedule, ''), ';'), '') AS d
         FROM feeds`,
    );
  }

  list(): FeedRow[] {
    return this.all.all();
  }

  get(name: string): FeedRow | null {
    return this.one.get(name) ?? null;
  }

  /** Writes a feed's settings (creating it), keeping its entries and refresh status. */
  save(feed: Omit<FeedRow, "etag" | "lastModified" | "lastRefreshAt" | "lastError" | "createdAt">): void {
    this.upsertFeed.run({
      $name: feed.name,
      $category: feed.category,
      $severity: feed.severity,
      $entryCount: feed.entryCount,
      $updatedAt: feed.updatedAt,
      $url: feed.url,
      $filePath: feed.filePath,
      $schedule: feed.schedule,
      $badLines: feed.badLines,
    });
  }

  /** The CIDRs a feed lists now, with when each was first listed. */
  entries(name: string): FeedEntryRow[] {
    return this.entriesOf.all(name);
  }

  /** Every entry of every feed, for building the index at start. */
  everyEntry(): FeedEntryRow[] {
    return this.allEntries.all();
  }

  /** Every entry after (feedName, cidr) in key order, `limit` of them: a page of a walk in steps. */
  entriesAfter(feedName: string, cidr: string, limit: number): { feedName: string; cidr: string }[] {
    return this.page.all(feedName, cidr, limit);
  }

  /** Lists `texts` (CIDRs in the normal form, not listed by the feed yet) under the feed. Call inside a transaction. */
  insertEntries(name: string, texts: readonly string[], nowMs: number): void {
    for (const text of texts) {
      const slash = text.indexOf("/");
      const version = text.includes(":") ? 6 : 4;
      const prefixLength = slash < 0 ? (version === 4 ? 32 : 128) : Number(text.slice(slash + 1));
      this.insertEntry.run(name, text, version, prefixLength, nowMs);
    }
  }

  /** Stops the feed listing `texts`. Call inside a transaction. */
  deleteEntries(name: string, texts: readonly string[]): void {
    for (const text of texts) this.deleteEntry.run(name, text);
  }

  /** Marks a feed as being changed in steps (see FeedService): `status` is what its lastError says until done. */
  markChangeUnderWay(name: string, status: string): void {
    this.setUnderWay.run(status, name);
  }

  /** A change in steps is done: the feed lists `entryCount` entries, and its status is clear. */
  markChangeDone(name: string, entryCount: number): void {
    this.setFinished.run(entryCount, name);
  }

  /** Removes a feed and its entries. Call inside a transaction. */
  remove(name: string): boolean {
    this.deleteAllEntries.run(name);
    return this.deleteFeed.run(name).changes > 0;
  }

  recordRefresh(name: string, atMs: number, error: string | null, validators: { etag?: string | null; lastModified?: string | null } = {}): void {
    this.setStatus.run({ $name: name, $at: atMs, $error: error, $etag: validators.etag ?? null, $lastModified: validators.lastModified ?? null });
  }

  /** Changes whenever any feed's entries or definition change: how another process's import or change is noticed. */
  version(): string {
    const row = this.dataVersion.get();
    return row ? `${row.n}:${row.v}:${row.m}:${Bun.hash(row.d).toString(36)}` : "0:0";
  }
}

/** The feeds and entries of a database holding the two tables: the main store or a snapshot (fewer columns). */
export function readListings(db: Database): { feeds: Pick<FeedRow, "name" | "category" | "severity" | "updatedAt">[]; entries: Pick<FeedEntryRow, "feedName" | "cidr">[] } {
  return {
    feeds: db.query("SELECT name, category, severity, updated_at AS updatedAt FROM feeds").all() as Pick<FeedRow, "name" | "category" | "severity" | "updatedAt">[],
    entries: db.query("SELECT feed_name AS feedName, cidr FROM feed_entries").all() as Pick<FeedEntryRow, "feedName" | "cidr">[],
  };
}
