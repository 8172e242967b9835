// Feeds (contract section 12): importing a list under a feed's name (adding to it, or replacing it whole),
// removing a feed, and keeping the index in step. One change runs in three steps:
// 1. under the write lock, the index and the listings first take what other processes committed (the rows of
//    their reports, their feed changes), then the listings take the change, so the scorer sees the new listings
//    and every reported address inside it is found;
// 2. the same transaction writes the entries and rescores the reported addresses inside what changed;
// 3. the index takes the networks' new records and the rescored addresses, synchronously, after the commit:
//    no request runs in between, so none sees half a list, and the blocklist ETag moves once.
// If the transaction fails, the listings are reloaded from the store and nothing has changed.

import type { Category } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { AppError, notFound } from "../../domain/errors";
import { type FeedList, type FeedListError, parseFeedList } from "../../domain/feed-list";
import { type Cidr, type Ip, formatIpv4, ipFromWords, ipv4FromNumber } from "../../domain/ip";
import type { ScoringParameters, Severity } from "../../domain/scoring";
import type { AddressRecord, ReputationIndex } from "../../index/reputation-index";
import { NOT_FOUND } from "../../index/radix-common";
import { addressRowsAmong } from "../../store/address-rows";
import { inTransaction, type Store } from "../../store/database";
import { dataVersion } from "../../store/database-health";
import type { Listing } from "../../domain/feeds";
import type { FeedRow, FeedTables } from "../../store/feeds";
import type { AddressScorer } from "../reports/scorer";
import { ListedNetworks } from "./listed-networks";
import { isFullLength, listingRecord, putListingsInto } from "./listing-records";

export interface FeedImportOptions {
  category: Category;
  severity: Severity;
  /** Replace the feed's entries (true) or add to them. */
  replace: boolean;
  /** A scheduled feed's source and schedule, kept with it; one-off imports leave them null. */
  source?: { url: string | null; filePath: string | null; schedule: string | null };
}

export interface FeedImportResult {
  feed: string;
  /** Entries the list held (distinct). */
  imported: number;
  /** Entries the feed lists now. */
  entries: number;
  lines: number;
  badLines: number;
  /** The first bad lines, with their numbers. */
  errors: FeedListError[];
  /** Reported addresses rescored because a listing around them changed. */
  rescored: number;
}

export interface FeedServiceDeps {
  store: Store;
  tables: FeedTables;
  listed: ListedNetworks;
  index: ReputationIndex;
  scorer: AddressScorer;
  clock: Clock;
  params: ScoringParameters;
  /**
   * Brings the index up to every row committed so far, another process's too (IndexSync.catchUp): called under
   * the write lock, before a change looks for the reported addresses inside it.
   */
  catchUpIndex: () => void;
  /**
   * False for a command that exits after one change (CLI `import blocklist`): the index, which only finds the
   * reported addresses a change rescores, is not brought in line after it (a million entries took hundreds of MB).
   */
  indexFollowsListings?: boolean;
  /**
   * The feeds' version (FeedTables.version) read before `listed` was loaded: a change another process commits
   * in between is then seen as one at the next look.
   */
  listedVersion: string;
}

export class FeedService {
  private readonly rowsAmong;
  /** What the store looked like when the listings were last loaded: another process's import changes it. */
  private storeVersion: string;
  /** Called after another process's feed changes were taken in (the schedule follows them). */
  onExternalChangesFollowed: (() => void) | null = null;
  /** The store's data version (dataVersion) when followIfOthersCommitted or a change last looked: it moves when another connection commits. */
  private seenDataVersion: number;

  constructor(private readonly deps: FeedServiceDeps) {
    this.rowsAmong = addressRowsAmong(deps.store);
    this.storeVersion = deps.listedVersion;
    this.seenDataVersion = dataVersion(deps.store.sqlite);
  }

  /**
   * Brings the listings up to what the store holds now, before scoring inside a write transaction (the scorer
   * calls it once per rescore). Another process's feed change otherwise reaches the listings at the change
   * watcher's next poll, up to 500 ms later, and a report scored in between kept a score without the new listing
   * for good. When no other connection has committed (the usual case) this costs one PRAGMA.
   */
  followIfOthersCommitted(): void {
    const version = dataVersion(this.deps.store.sqlite);
    if (version === this.seenDataVersion) return;
    this.seenDataVersion = version;
    this.followExternalChanges();
  }

  get listed(): ListedNetworks {
    return this.deps.listed;
  }

  /**
   * Saves a scheduled feed's definition (added or changed) as this service's own change: saved past it, the
   * feeds' version moved, and the next change's catch-up took it for another process's and reloaded every listing.
   */
  saveDefinition(row: Parameters<FeedTables["save"]>[0]): void {
    this.deps.tables.save(row);
    this.storeVersion = this.deps.tables.version();
  }

  /** Reads `text` as a list and imports it (see importList). */
  importText(name: string, text: string, options: FeedImportOptions, onProgress?: (linesRead: number) => void): FeedImportResult {
    return this.importList(name, parseFeedList(text, onProgress), options);
  }

  /** Makes a parsed list the feed's entries (replace) or adds them. A replace with nothing parsed is refused. */
  importList(name: string, list: FeedList, options: FeedImportOptions): FeedImportResult {
    const { tables, listed, clock } = this.deps;
    if (list.entries.length === 0 && options.replace) {
      throw new AppError("bad_request", `The list has no valid entries (${list.badLines} bad lines): a replace would empty feed ${name}, so nothing was changed`);
    }
    const now = clock.now();
    const rescored = new Map<string, { ip: Ip; record: AddressRecord | null }>();
    let changed: Cidr[] = [];
    let candidates: Ip[] = [];
    let entries = 0;
    try {
      inTransaction(this.deps.store, () => {
        this.catchUp();
        const previous = tables.get(name);
        changed = listed.setFeed(name, { category: options.category, severity: options.severity, updatedAt: now }, list.entries, options.replace);
        candidates = this.addressesWithin(changed);
        // The feed row first: its entries reference it.
        tables.save(feedRowOf(name, options, previous, now, 0, list.badLines));
        entries = tables.writeEntries(name, list.entries, now, options.replace);
        tables.save(feedRowOf(name, options, previous, now, entries, list.badLines));
        this.rescoreRows(candidates, now, rescored);
      });
    } catch (error) {
      this.reload();
      throw error;
    }
    this.storeVersion = tables.version();
    if (this.deps.indexFollowsListings !== false) this.applyToIndex(changed, candidates, rescored, now);
    return { feed: name, imported: list.entries.length, entries, lines: list.lines, badLines: list.badLines, errors: list.errors, rescored: rescored.size };
  }

  /** Removes a feed and its listings. */
  remove(name: string): void {
    const { tables, listed, clock } = this.deps;
    if (tables.get(name) === null) throw notFound(`No feed named ${name}`);
    const now = clock.now();
    const rescored = new Map<string, { ip: Ip; record: AddressRecord | null }>();
    let changed: Cidr[] = [];
    let candidates: Ip[] = [];
    try {
      inTransaction(this.deps.store, () => {
        this.catchUp();
        changed = listed.removeFeed(name);
        candidates = this.addressesWithin(changed);
        tables.remove(name);
        this.rescoreRows(candidates, now, rescored);
      });
    } catch (error) {
      this.reload();
      throw error;
    }
    this.storeVersion = tables.version();
    this.applyToIndex(changed, candidates, rescored, now);
  }

  /**
   * After another process (a CLI import) changed the feeds: reloads the listings and brings the index's
   * networks and feed-only addresses in line. The rows that process rescored reach the index through the
   * address change log, as any other change does.
   */
  followExternalChanges(): void {
    const version = this.deps.tables.version();
    if (version === this.storeVersion) return;
    const before = [...this.deps.listed.cidrs()];
    this.reload();
    this.storeVersion = version;
    const changed = new Map<string, Cidr>();
    for (const c of before) changed.set(c.text, c);
    for (const c of this.deps.listed.cidrs()) changed.set(c.text, c);
    const cidrs = [...changed.values()];
    this.applyToIndex(cidrs, this.addressesWithin(cidrs), null, this.deps.clock.now());
    this.onExternalChangesFollowed?.();
  }

  /**
   * Under the write lock at the start of a change: what other processes committed until now (rows and feeds) is
   * taken in first, so the change neither misses a reported address nor scores with listings it has not seen.
   */
  private catchUp(): void {
    this.deps.catchUpIndex();
    // Nothing else commits until this change has: the scoring inside it (followIfOthersCommitted) need not follow
    // again, which would reload the listings from this change's own uncommitted rows.
    this.seenDataVersion = dataVersion(this.deps.store.sqlite);
    this.followExternalChanges();
  }

  /** Puts every listing into a freshly built index (at start; the rows of reported addresses are already in). */
  loadIntoIndex(): void {
    putListingsInto(this.deps.index, this.deps.listed, this.deps.clock.now(), this.deps.params, this.rowsAmong);
  }

  private reload(): void {
    const { tables } = this.deps;
    const fresh = ListedNetworks.load(tables.list(), tables.everyEntry());
    const listed = this.deps.listed;
    // Same object for everyone holding it (scorer, reputation): move the fresh state in.
    for (const name of [...listed.feeds.keys()]) listed.removeFeed(name);
    for (const [name, settings] of fresh.feeds) listed.setFeed(name, settings, fresh.cidrsOf(name), true);
  }

  /**
   * Rescores, inside the caller's transaction, the candidates that have an `addresses` row. Every address with a
   * row is in the index, so only candidates found there are looked up in the store.
   */
  private rescoreRows(candidates: readonly Ip[], now: number, out: Map<string, { ip: Ip; record: AddressRecord | null }>): void {
    const { scorer } = this.deps;
    const withRow = this.withRow(candidates);
    for (const ip of candidates) if (withRow.has(ip.text)) out.set(ip.text, { ip, record: scorer.rescore(ip, now) });
  }

  /** The texts of the candidates that have an `addresses` row; every address with a row is in the index. */
  private withRow(candidates: readonly Ip[]): Set<string> {
    const { index } = this.deps;
    return this.rowsAmong(candidates.filter((ip) => index.slotOf(ip) !== NOT_FOUND).map((ip) => ip.text));
  }

  /**
   * The index's own address entries inside the changed CIDRs, and the changed single addresses themselves (only
   * those in the index when the index does not follow the listings: rescoring needs no others).
   */
  private addressesWithin(changed: readonly Cidr[]): Ip[] {
    const { index } = this.deps;
    const indexedOnly = this.deps.indexFollowsListings === false;
    const out = new Map<string, Ip>();
    for (const cidr of changed) {
      const ip = cidr.network;
      if (ip.version === 4) {
        if (cidr.prefixLength === 32) {
          if (!indexedOnly || index.slotOfV4(ip.value) !== NOT_FOUND) out.set(ip.text, ip);
        }
        else index.v4.walkSubtree(ip.value, cidr.prefixLength, (n, len) => void (len === 32 && out.set(formatIpv4(n), ipv4FromNumber(n))));
      } else if (cidr.prefixLength === 128) {
        if (!indexedOnly || index.slotOf(ip) !== NOT_FOUND) out.set(ip.text, ip);
      } else {
        index.v6.walkSubtree(ip.words, cidr.prefixLength, (words, len) => {
          if (len !== 128) return;
          const found = ipFromWords(words);
          out.set(found.text, found);
        });
      }
    }
    return [...out.values()];
  }

  /**
   * Brings the index in line after the listings changed: every listed network's record (a change to one changes
   * those inside it), then the candidates: rescored ones from their rows, listed ones without a row from their
   * listings, others out. `rescored` is null after another process's change: candidates with a row are then left
   * to the address change log, which brings that process's rescoring.
   */
  private applyToIndex(changed: readonly Cidr[], candidates: readonly Ip[], rescored: Map<string, { ip: Ip; record: AddressRecord | null }> | null, now: number): void {
    const { index, listed, params } = this.deps;
    // After another process's change, the candidates with a row are left to the address change log.
    const leftToLog = rescored === null ? this.withRow(candidates) : null;
    for (const cidr of changed) if (!isFullLength(cidr) && !listed.has(cidr)) index.removeNetwork(cidr);
    // Entries listed by the same feeds share a record: computed once per set of feeds.
    const byFeeds = new Map<string, AddressRecord | null>();
    const recordOf = (key: Ip | Cidr) => {
      const feeds = listed.feedsAround(key);
      let record = byFeeds.get(feeds);
      if (record === undefined) {
        record = listingRecord(listed, key, now, params);
        byFeeds.set(feeds, record);
      }
      return record;
    };
    if (changed.some((c) => !isFullLength(c))) {
      for (const cidr of listed.cidrs()) {
        if (isFullLength(cidr)) continue;
        const record = recordOf(cidr);
        if (record) index.upsertNetwork(cidr, record);
      }
    }
    for (const ip of candidates) {
      const done = rescored?.get(ip.text);
      if (done) {
        if (done.record) index.upsert(ip, done.record);
        else index.remove(ip);
        continue;
      }
      const inIndex = index.slotOf(ip) !== NOT_FOUND;
      if (leftToLog?.has(ip.text)) continue;
      if (!listed.listsAddress(ip)) {
        if (inIndex) index.remove(ip);
        continue;
      }
      const record = recordOf(ip);
      if (record) index.upsertIfChanged(ip, record);
    }
  }
}

function feedRowOf(name: string, options: FeedImportOptions, previous: FeedRow | null, now: number, entryCount: number, badLines: number) {
  const source = options.source ?? { url: previous?.url ?? null, filePath: previous?.filePath ?? null, schedule: previous?.schedule ?? null };
  return { name, category: options.category, severity: options.severity, entryCount, updatedAt: now, url: source.url, filePath: source.filePath, schedule: source.schedule, badLines };
}
