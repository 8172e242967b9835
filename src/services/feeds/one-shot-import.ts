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
import { FeedImportList } from "../../store/feed-import-list";
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
  const now = deps.clock.now();
  return inTransaction(store, () => {
    const list = new FeedImportList(store);
    list.clear();
    deps.catchUpIndex();
    try {
      const read = readInto(list, text, onProgress);
      if (read.distinct === 0 && options.replace) {
        throw new AppError("bad_request", `The list has no valid entries (${read.badLines} bad lines): a replace would empty feed ${name}, so nothing was changed`);
      }
      const previous = tables.get(name);
      const source = options.source ?? { url: previous?.url ?? null, filePath: previous?.filePath ?? null, schedule: previous?.schedule ?? null };
      const row = { name, category: options.category, severity: options.severity, entryCount: 0, updatedAt: now, url: source.url, filePath: source.filePath, schedule: source.schedule, badLines: read.badLines };
      // The feed row first: its entries reference it.
      tables.save(row);
      const candidates = new Map<string, Ip>();
      if (options.replace) {
        for (const cidr of list.notListed(name)) addressesWithin(deps.index, cidr, candidates);
        list.deleteNotListed(name);
      }
      list.insertNew(name, now);
      // Every entry of the feed is listed anew (its time changed): the addresses inside any of them are rescored.
      for (const cidr of list.entriesOf(name)) addressesWithin(deps.index, cidr, candidates);
      const entries = list.countOf(name);
      tables.save({ ...row, entryCount: entries });
      const rescored = rescoreWithStoredListings(deps, list, [...candidates.values()], now);
      return { feed: name, imported: read.distinct, entries, lines: read.lines, badLines: read.badLines, errors: read.errors, rescored };
    } finally {
      list.clear();
    }
  });
}

/** Reads the list's lines into the temporary table (distinct entries); the first bad lines are kept. */
function readInto(list: FeedImportList, text: string, onProgress?: (linesRead: number) => void) {
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
      distinct += list.add(entry.text, entry.version, entry.prefixLength);
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
function rescoreWithStoredListings(deps: OneShotImportDeps, list: FeedImportList, candidates: readonly Ip[], now: number): number {
  const withRow = addressRowsAmong(deps.store)(candidates.map((ip) => ip.text));
  if (withRow.size === 0) return 0;
  const feeds = deps.tables.list();
  const networks = ListedNetworks.load(feeds, list.networks());
  const listingOf = new Map(feeds.map((f) => [f.name, { feed: f.name, category: f.category as Category, severity: f.severity as Severity, listedAtMs: f.updatedAt }]));
  const feedsListing = list.feedsListing();
  const listingsAround = (ip: Ip): Listing[] => {
    const out = networks.listingsAround(ip);
    for (const feed of feedsListing(`${ip.text}/${ip.version === 4 ? 32 : 128}`)) out.push(listingOf.get(feed)!);
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
