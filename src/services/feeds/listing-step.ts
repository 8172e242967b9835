// One step of a feed change, or of following another process's (issue 29): a chunk of entries listed, moved to
// a feed's new version or unlisted, in memory and in the store, with the reported addresses inside them
// rescored, in one short transaction; then, in the same turn, the index records of everything the chunk changed.
// Between two steps every entry, its store rows and its index record agree (old or new listing, never half).

import type { Clock } from "../../domain/clock";
import { type Cidr, type Ip, cidrOf, formatIpv4, ipFromWords, ipv4FromNumber } from "../../domain/ip";
import type { ScoringParameters } from "../../domain/scoring";
import { NOT_FOUND } from "../../index/radix-common";
import type { AddressRecord, ReputationIndex } from "../../index/reputation-index";
import { inTransaction, type Store, unlessLocked } from "../../store/database";
import type { FeedTables } from "../../store/feeds";
import type { AddressScorer } from "../reports/scorer";
import type { FeedVersion, ListedNetworks } from "./listed-networks";
import { isFullLength, listingRecord } from "./listing-records";

/** One entry's move: `to` lists it under that version (null: unlisted); `write` what the store does. */
export interface ListingMove {
  feed: string;
  cidr: Cidr;
  to: FeedVersion | null;
  write: "insert" | "delete" | null;
}

export interface ListingStepDeps {
  store: Store;
  tables: FeedTables;
  listed: ListedNetworks;
  index: ReputationIndex;
  scorer: AddressScorer;
  clock: Clock;
  params: ScoringParameters;
  rowsAmong: (ipTexts: readonly string[]) => Set<string>;
  /** False in a one-shot command: the index only finds the reported addresses to rescore (FeedServiceDeps). */
  indexFollows: boolean;
}

/**
 * What a step's transaction did: its outcome; "overtaken" when beforeWrite said another process changed the feeds
 * (nothing done: the caller follows first); "locked" when another process held the write lock (nothing done: the
 * caller tries again a little later, rather than hold the event loop in SQLite's busy wait).
 */
export type StepResult = StepOutcome | "overtaken" | "locked";

export interface StepOutcome {
  /** Records the step looked at or rescored: its cost beside the moves themselves. */
  touched: number;
  rescored: number;
}

const sameListing = (a: FeedVersion | undefined, b: FeedVersion | null): boolean =>
  a !== undefined && b !== null && a.category === b.category && a.severity === b.severity && a.updatedAt === b.updatedAt;

export class ListingStep {
  constructor(private readonly deps: ListingStepDeps) {}

  /**
   * Applies `moves` at `nowMs` (see StepResult). `beforeWrite` runs first inside the transaction; `rescore`:
   * this process's own change rescores the reported addresses inside it; a followed change leaves their rows to
   * the address change log (that process rescored them). `beforeCommit` runs last inside the transaction.
   */
  apply(moves: readonly ListingMove[], nowMs: number, options: { rescore: boolean; beforeWrite?: () => boolean; beforeCommit?: () => void }): StepResult {
    const { listed, tables, store } = this.deps;
    const undo: (() => void)[] = [];
    const changed: Cidr[] = [];
    let candidates: Ip[] = [];
    let networks: Cidr[] = [];
    const rescored = new Map<string, { ip: Ip; record: AddressRecord | null }>();
    try {
      // A followed change writes nothing: no transaction, so no wait for another process's write lock.
      const writes = options.rescore || options.beforeWrite !== undefined || moves.some((m) => m.write !== null);
      const transaction = (work: () => boolean) => (writes ? unlessLocked(store, () => inTransaction(store, work)) : work());
      const done = transaction(() => {
        if (options.beforeWrite && !options.beforeWrite()) return false;
        const inserts = new Map<string, string[]>();
        const deletes = new Map<string, string[]>();
        for (const move of moves) {
          const before = listed.versionAt(move.feed, move.cidr);
          if (move.to !== null) {
            if (before === move.to) continue;
            listed.list(move.to, move.cidr);
            undo.push(before ? () => listed.list(before, move.cidr) : () => void listed.unlist(move.feed, move.cidr));
            if (!sameListing(before, move.to)) changed.push(move.cidr);
          } else if (before !== undefined) {
            listed.unlist(move.feed, move.cidr);
            undo.push(() => listed.list(before, move.cidr));
            changed.push(move.cidr);
          }
          if (move.write !== null) {
            const into = move.write === "insert" ? inserts : deletes;
            const texts = into.get(move.feed);
            if (texts) texts.push(move.cidr.text);
            else into.set(move.feed, [move.cidr.text]);
          }
        }
        // In key order: the unique index on (feed, cidr) then takes them page by page.
        for (const [feed, texts] of deletes) tables.deleteEntries(feed, texts);
        for (const [feed, texts] of inserts) tables.insertEntries(feed, texts.sort(), nowMs);
        ({ addresses: candidates, networks } = this.within(changed));
        if (options.rescore) this.rescoreRows(candidates, nowMs, rescored);
        options.beforeCommit?.();
        return true;
      });
      if (done !== true) {
        for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
        return done === null ? "locked" : "overtaken";
      }
    } catch (error) {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
      throw error;
    }
    if (this.deps.indexFollows) this.applyToIndex(networks, candidates, options.rescore ? rescored : null, nowMs);
    return { touched: candidates.length + networks.length, rescored: rescored.size };
  }

  /**
   * Rescores `ips` (those with an `addresses` row) in one transaction and puts their records in the index; false,
   * with nothing done, when another process held the write lock.
   */
  rescoreAll(ips: readonly Ip[], nowMs: number): boolean {
    const rescored = new Map<string, { ip: Ip; record: AddressRecord | null }>();
    if (unlessLocked(this.deps.store, () => inTransaction(this.deps.store, () => this.rescoreRows(ips, nowMs, rescored))) === null) return false;
    if (this.deps.indexFollows) for (const { ip, record } of rescored.values()) this.putAddress(ip, record);
    return true;
  }

  /** Rescores, inside the caller's transaction, the candidates that have an `addresses` row. */
  private rescoreRows(candidates: readonly Ip[], now: number, out: Map<string, { ip: Ip; record: AddressRecord | null }>): void {
    const withRow = this.withRow(candidates);
    for (const ip of candidates) if (withRow.has(ip.text)) out.set(ip.text, { ip, record: this.deps.scorer.rescore(ip, now) });
  }

  /** The texts of the candidates that have an `addresses` row; every address with a row is in the index. */
  private withRow(candidates: readonly Ip[]): Set<string> {
    const { index } = this.deps;
    return this.deps.rowsAmong(candidates.filter((ip) => index.slotOf(ip) !== NOT_FOUND).map((ip) => ip.text));
  }

  /**
   * What a change of listings at `changed` changes the records of: the index's addresses inside them and the
   * changed single addresses (only those in the index when the index does not follow the listings), and the
   * listed networks inside a changed network (their records count the listings around them).
   */
  private within(changed: readonly Cidr[]): { addresses: Ip[]; networks: Cidr[] } {
    const { index } = this.deps;
    const indexedOnly = !this.deps.indexFollows;
    const addresses = new Map<string, Ip>();
    const networks = new Map<string, Cidr>();
    for (const cidr of changed) {
      const ip = cidr.network;
      if (isFullLength(cidr)) {
        if (!indexedOnly || index.slotOf(ip) !== NOT_FOUND) addresses.set(ip.text, ip);
        continue;
      }
      networks.set(cidr.text, cidr);
      if (ip.version === 4) {
        index.v4.walkSubtree(ip.value, cidr.prefixLength, (n, len) => {
          if (len === 32) addresses.set(formatIpv4(n), ipv4FromNumber(n));
          else if (!indexedOnly && len > cidr.prefixLength) {
            const inner = cidrOf(ipv4FromNumber(n), len);
            networks.set(inner.text, inner);
          }
        });
      } else {
        index.v6.walkSubtree(ip.words, cidr.prefixLength, (words, len) => {
          const found = ipFromWords(words);
          if (len === 128) addresses.set(found.text, found);
          else if (!indexedOnly && len > cidr.prefixLength) {
            const inner = cidrOf(found, len);
            networks.set(inner.text, inner);
          }
        });
      }
    }
    return { addresses: [...addresses.values()], networks: [...networks.values()] };
  }

  /**
   * Brings the index in line with the chunk: each network whose listings changed (or around which they did) gets
   * its record or leaves; then the candidates: rescored ones from their rows, listed ones without a row from
   * their listings, others out. `rescored` is null for a followed change: candidates with a row are left to the
   * address change log, which brings that process's rescoring.
   */
  private applyToIndex(networks: readonly Cidr[], candidates: readonly Ip[], rescored: Map<string, { ip: Ip; record: AddressRecord | null }> | null, now: number): void {
    const { index, listed, params } = this.deps;
    const leftToLog = rescored === null ? this.withRow(candidates) : null;
    // Entries listed by the same feed versions share a record: computed once per set of versions.
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
    for (const cidr of networks) {
      const record = listed.has(cidr) ? recordOf(cidr) : null;
      if (record) index.upsertNetwork(cidr, record);
      else index.removeNetwork(cidr);
    }
    for (const ip of candidates) {
      const done = rescored?.get(ip.text);
      if (done) {
        this.putAddress(ip, done.record);
        continue;
      }
      if (leftToLog?.has(ip.text)) continue;
      if (!listed.listsAddress(ip)) {
        if (index.slotOf(ip) !== NOT_FOUND) index.remove(ip);
        continue;
      }
      const record = recordOf(ip);
      if (record) index.upsertIfChanged(ip, record);
    }
  }

  private putAddress(ip: Ip, record: AddressRecord | null): void {
    if (record) this.deps.index.upsert(ip, record);
    else this.deps.index.remove(ip);
  }
}
