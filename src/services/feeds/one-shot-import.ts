// `import blocklist` in a process of its own (issue 29: a 1 M-line list within 400 MB): the list goes a line at
// a time into a temporary table of its texts, and the feed's rows are made from that table by SQL, rather than
// held as parsed entries and listings for every entry at once. The reported addresses to rescore are found by
// walking the feed's rows (each import dates every entry anew) and the ones it drops, and scored with listings
// read from the store: the networks of every feed in memory, single addresses looked up. One transaction, as
// before: a server following it sees the whole change or none of it.

import type { Category } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { type FeedListError, feedLineEntry } from "../../domain/feed-list";
import type { Listing } from "../../domain/feeds";
import { type Ip, formatIpv4, ipFromWords, ipv4FromNumber, tryParseCidr } from "../../domain/ip";
import type { ScoringParameters, Severity } from "../../domain/scoring";
import { NOT_FOUND } from "../../index/radix-common";
import type { ReputationIndex } from "../../index/reputation-index";
import { addressRowsAmong } from "../../store/address-rows";
import { inTransaction, type Store } from "../../store/database";
import type { FeedTables } from "../../store/feeds";
import { createAddressScorer } from "../reports/scorer";
import type { FeedImportOptions, FeedImportResult } from "./feed-change";
import { ListedNetworks } from "./listed-networks";

const MAX_ERRORS_KEPT = 1000;

export interface OneShotImportDeps {
  store: Store;
  tables: FeedTables;
  /** The index built from the `addresses` rows: where the reported addresses inside a listing are found. */
  index: ReputationIndex;
  params: ScoringParameters;
  clock: Clock;
  /** Brings the index up to the rows committed since it was built (IndexSync.catchUp), under the write lock. */
  catchUpIndex: () => void;
}

/** Imports `text` under the feed `name` (replace or add), in one transaction; see the module's header. */
export function importBlocklistOnce(deps: OneShotImportDeps, name: string, text: string, options: FeedImportOptions, onProgress?: (linesRead: number) => void): FeedImportResult {
  const { store, tables } = deps;
  const db = store.sqlite;
  const now = deps.clock.now();
  return inTransaction(store, () => {
    db.exec("CREATE TEMP TABLE IF NOT EXISTS feed_import_list (cidr TEXT PRIMARY KEY, ip_version INTEGER NOT NULL, prefix_length INTEGER NOT NULL) WITHOUT ROWID");
    db.exec("DELETE FROM temp.feed_import_list");
    deps.catchUpIndex();
    try {
      const read = readInto(db, text, onProgress);
      if (read.distinct === 0 && options.replace) {
        throw new AppError("bad_request", `The list has no valid entries (${read.badLines} bad lines): a replace would empty feed ${name}, so nothing was changed`);
      }
      const previous = tables.get(name);
      const source = options.source ?? { url: previous?.url ?? null, filePath: previous?.filePath ?? null, schedule: previous?.schedule ?? null };
      const row = { name, category: options.category, severity: options.severity, entryCount: 0, updatedAt: now, url: source.url, filePath: source.filePath, schedule: source.schedule, badLines: read.badLines };
      // The feed row first: its entries reference it.
      tables.save(row);
      const candidates = new Map<string, Ip>();
      const collect = (cidrText: string) => addressesWithin(deps.index, cidrText, candidates);
      if (options.replace) {
        const dropped = db.query<{ cidr: string }, [string]>("SELECT cidr FROM feed_entries WHERE feed_name = ? AND cidr NOT IN (SELECT cidr FROM temp.feed_import_list)");
        for (const r of dropped.iterate(name)) collect(r.cidr);
        db.query("DELETE FROM feed_entries WHERE feed_name = ? AND cidr NOT IN (SELECT cidr FROM temp.feed_import_list)").run(name);
      }
      // In key order: the unique index on (feed, cidr) grows at its end instead of at random pages.
      db.query(
        `INSERT INTO feed_entries (feed_name, cidr, ip_version, prefix_length, created_at)
         SELECT ?, cidr, ip_version, prefix_length, ? FROM temp.feed_import_list WHERE true ORDER BY cidr
         ON CONFLICT(feed_name, cidr) DO NOTHING`,
      ).run(name, now);
      // Every entry of the feed is listed anew (its time changed): the addresses inside any of them are rescored.
      for (const r of db.query<{ cidr: string }, [string]>("SELECT cidr FROM feed_entries WHERE feed_name = ?").iterate(name)) collect(r.cidr);
      const entries = (db.query("SELECT count(*) AS n FROM feed_entries WHERE feed_name = ?").get(name) as { n: number }).n;
      tables.save({ ...row, entryCount: entries });
      const rescored = rescoreWithStoredListings(deps, [...candidates.values()], now);
      return { feed: name, imported: read.distinct, entries, lines: read.lines, badLines: read.badLines, errors: read.errors, rescored };
    } finally {
      db.exec("DELETE FROM temp.feed_import_list");
    }
  });
}

/** Reads the list's lines into the temporary table (distinct entries); the first bad lines are kept. */
function readInto(db: Store["sqlite"], text: string, onProgress?: (linesRead: number) => void) {
  const insert = db.query<unknown, [string, number, number]>("INSERT INTO temp.feed_import_list (cidr, ip_version, prefix_length) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  const errors: FeedListError[] = [];
  let lines = 0;
  let badLines = 0;
  let distinct = 0;
  // Lines are cut by hand: split("\n") on a 1 M-line list holds every line as a string at once.
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    const raw = text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end);
    lines++;
    const entry = feedLineEntry(raw);
    if (typeof entry === "string") {
      badLines++;
      if (errors.length < MAX_ERRORS_KEPT) errors.push({ line: lines, input: raw.slice(0, 200), error: entry });
    } else if (entry !== null) {
      distinct += insert.run(entry.text, entry.version, entry.prefixLength).changes;
    }
    if (onProgress && lines % 100_000 === 0) onProgress(lines);
    start = end + 1;
  }
  return { lines, badLines, distinct, errors };
}

/** Adds to `out` the index's addresses inside the CIDR `cidrText` (or the address itself when it is one the index holds). */
function addressesWithin(index: ReputationIndex, cidrText: string, out: Map<string, Ip>): void {
  const cidr = tryParseCidr(cidrText);
  if (typeof cidr === "string") return;
  const ip = cidr.network;
  if (cidr.prefixLength === (ip.version === 4 ? 32 : 128)) {
    if (index.slotOf(ip) !== NOT_FOUND) out.set(ip.text, ip);
  } else if (ip.version === 4) {
    index.v4.walkSubtree(ip.value, cidr.prefixLength, (n, len) => void (len === 32 && out.set(formatIpv4(n), ipv4FromNumber(n))));
  } else {
    index.v6.walkSubtree(ip.words, cidr.prefixLength, (words, len) => {
      if (len !== 128) return;
      const found = ipFromWords(words);
      out.set(found.text, found);
    });
  }
}

/**
 * Rescores the candidates that have an `addresses` row, with the listings the store holds now: every feed's
 * networks loaded in memory (few next to the addresses), a single listed address looked up in the table.
 */
function rescoreWithStoredListings(deps: OneShotImportDeps, candidates: readonly Ip[], now: number): number {
  const withRow = addressRowsAmong(deps.store)(candidates.map((ip) => ip.text));
  if (withRow.size === 0) return 0;
  const db = deps.store.sqlite;
  const feeds = deps.tables.list();
  const networkRows = db.query<{ feedName: string; cidr: string }, []>("SELECT feed_name AS feedName, cidr FROM feed_entries WHERE prefix_length < CASE ip_version WHEN 4 THEN 32 ELSE 128 END").all();
  const networks = ListedNetworks.load(feeds, networkRows);
  const listingOf = new Map(feeds.map((f) => [f.name, { feed: f.name, category: f.category as Category, severity: f.severity as Severity, listedAtMs: f.updatedAt }]));
  // By the (feed_name, cidr) index, one look per feed.
  const singles = db.query<{ feedName: string }, [string]>("SELECT feed_name AS feedName FROM feed_entries WHERE feed_name IN (SELECT name FROM feeds) AND cidr = ? ORDER BY feed_name");
  const listingsAround = (ip: Ip): Listing[] => {
    const out = networks.listingsAround(ip);
    for (const r of singles.all(`${ip.text}/${ip.version === 4 ? 32 : 128}`)) out.push(listingOf.get(r.feedName)!);
    return out;
  };
  const scorer = createAddressScorer(deps.store, deps.params, { listingsAround });
  let rescored = 0;
  for (const ip of candidates) {
    if (!withRow.has(ip.text)) continue;
    scorer.rescore(ip, now);
    rescored++;
  }
  return rescored;
}
