// `import blocklist`'s list in a temporary table (services/feeds/one-shot-import.ts): the list's texts, distinct,
// and the statements that make a feed's rows from them; read back with the feeds' networks and the feeds listing a
// single address, which the import's rescoring counts. Call inside the import's transaction.

import type { Store } from "./database";

export class FeedImportList {
  private readonly db;
  private readonly insert;

  constructor(store: Store) {
    this.db = store.sqlite;
    this.db.exec("CREATE TEMP TABLE IF NOT EXISTS feed_import_list (cidr TEXT PRIMARY KEY, ip_version INTEGER NOT NULL, prefix_length INTEGER NOT NULL) WITHOUT ROWID");
    this.insert = this.db.query<unknown, [string, number, number]>("INSERT INTO temp.feed_import_list (cidr, ip_version, prefix_length) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  }

  clear(): void {
    this.db.exec("DELETE FROM temp.feed_import_list");
  }

  /** Adds an entry (its normal text); 1 when it was not in the list yet, else 0. */
  add(text: string, ipVersion: number, prefixLength: number): number {
    return this.insert.run(text, ipVersion, prefixLength).changes;
  }

  /** The feed's entries the list does not hold, one at a time. */
  *notListed(feed: string): Generator<string> {
    for (const r of this.db.query<{ cidr: string }, [string]>("SELECT cidr FROM feed_entries WHERE feed_name = ? AND cidr NOT IN (SELECT cidr FROM temp.feed_import_list)").iterate(feed)) yield r.cidr;
  }

  deleteNotListed(feed: string): void {
    this.db.query("DELETE FROM feed_entries WHERE feed_name = ? AND cidr NOT IN (SELECT cidr FROM temp.feed_import_list)").run(feed);
  }

  /** Lists under the feed every entry of the list it does not list yet, in key order (the unique index grows at its end). */
  insertNew(feed: string, nowMs: number): void {
    this.db
      .query(
        `INSERT INTO feed_entries (feed_name, cidr, ip_version, prefix_length, created_at)
         SELECT ?, cidr, ip_version, prefix_length, ? FROM temp.feed_import_list WHERE true ORDER BY cidr
         ON CONFLICT(feed_name, cidr) DO NOTHING`,
      )
      .run(feed, nowMs);
  }

  /** The feed's entries, one at a time. */
  *entriesOf(feed: string): Generator<string> {
    for (const r of this.db.query<{ cidr: string }, [string]>("SELECT cidr FROM feed_entries WHERE feed_name = ?").iterate(feed)) yield r.cidr;
  }

  countOf(feed: string): number {
    return (this.db.query("SELECT count(*) AS n FROM feed_entries WHERE feed_name = ?").get(feed) as { n: number }).n;
  }

  /** Every feed's networks (entries shorter than a single address): few next to the addresses. */
  networks(): { feedName: string; cidr: string }[] {
    return this.db.query<{ feedName: string; cidr: string }, []>("SELECT feed_name AS feedName, cidr FROM feed_entries WHERE prefix_length < CASE ip_version WHEN 4 THEN 32 ELSE 128 END").all();
  }

  /** The feeds listing exactly `cidr` (by the (feed_name, cidr) index: one search per feed), by name. */
  feedsListing(): (cidr: string) => string[] {
    const q = this.db.query<{ feedName: string }, [string]>("SELECT feed_name AS feedName FROM feed_entries WHERE feed_name IN (SELECT name FROM feeds) AND cidr = ? ORDER BY feed_name");
    return (cidr) => q.all(cidr).map((r) => r.feedName);
  }
}
