// What the feeds list now, in memory (contract section 12): every listed network or address with the feeds that
// list it, found through radix trees, so that "which listings are around this address" costs one tree walk.
// A mirror of `feed_entries` and `feeds`: loaded from the store at start, then changed a step at a time in the same
// transactions as the store (listing-step.ts); each entry holds the version of each feed listing it.

import type { Category } from "../../domain/categories";
import type { Listing } from "../../domain/feeds";
import { type Cidr, type Ip, tryParseCidr } from "../../domain/ip";
import type { Severity } from "../../domain/scoring";
import { IpRadixTree, NOT_FOUND } from "../../index/radix";
import type { FeedEntryRow, FeedRow } from "../../store/feeds";

export interface FeedSettings {
  category: Category;
  severity: Severity;
  /** When the feed's entries were last replaced or added to. */
  updatedAt: number;
}

/**
 * One feed's settings as its listings carry them. A change of settings (every import dates the feed anew) makes
 * a new version, and a change moves the feed's entries to it a step at a time: between two steps each entry
 * shows the listing of the version it holds, old or new, as the index record made from it does.
 */
export interface FeedVersion extends FeedSettings {
  readonly name: string;
  /** Tells versions apart in feedsAround's key. */
  readonly id: number;
}

/** A network (or single address) and the versions of the feeds listing it, by feed name. */
interface ListedEntry {
  cidr: Cidr;
  feeds: FeedVersion[];
}

/** What the IP detail record shows of one listing: `networks[]`. */
export interface NetworkView {
  cidr: string;
  source: string;
  category: Category;
}

export class ListedNetworks {
  private readonly tree = new IpRadixTree();
  private readonly entries: (ListedEntry | undefined)[] = [];
  private readonly freeIds: number[] = [];
  /** Listed entries (the tree maps each CIDR to its slot: no map by text, whose rehash held a step 10s of ms). */
  private count = 0;
  /** Each feed's latest version: what the feed's row says and what its entries are moving to. */
  readonly feeds = new Map<string, FeedVersion>();
  private versions = 0;

  static load(feeds: readonly Pick<FeedRow, "name" | "category" | "severity" | "updatedAt">[], entries: Iterable<Pick<FeedEntryRow, "feedName" | "cidr">>): ListedNetworks {
    const listed = new ListedNetworks();
    for (const f of feeds) listed.newVersion(f.name, { category: f.category as Category, severity: f.severity as Severity, updatedAt: f.updatedAt });
    for (const row of entries) {
      const cidr = tryParseCidr(row.cidr);
      const version = listed.feeds.get(row.feedName);
      if (typeof cidr !== "string" && version) listed.list(version, cidr);
    }
    listed.tree.compact();
    return listed;
  }

  get size(): number {
    return this.count;
  }

  /** Makes `settings` the feed's latest version (its entries keep theirs until moved with list()). */
  newVersion(feed: string, settings: FeedSettings): FeedVersion {
    const version: FeedVersion = { name: feed, category: settings.category, severity: settings.severity, updatedAt: settings.updatedAt, id: ++this.versions };
    this.feeds.set(feed, version);
    return version;
  }

  /** Forgets a feed's settings (its entries are unlisted first). */
  forgetFeed(feed: string): void {
    this.feeds.delete(feed);
  }

  /** Every listed network or address. */
  *cidrs(): Generator<Cidr> {
    for (const e of this.entries) if (e) yield e.cidr;
  }

  /** The CIDRs a feed lists. */
  cidrsOf(feed: string): Cidr[] {
    const out: Cidr[] = [];
    for (const e of this.entries) if (e && e.feeds.some((v) => v.name === feed)) out.push(e.cidr);
    return out;
  }

  /** Entry slots, for a walk in steps (slots freed during the walk read as undefined; new ones come at the end or in freed slots). */
  get slots(): number {
    return this.entries.length;
  }

  /** The entry in `slot`: its CIDR and the versions listing it; undefined for a free slot. */
  entryAt(slot: number): { readonly cidr: Cidr; readonly feeds: readonly FeedVersion[] } | undefined {
    return this.entries[slot];
  }

  /** The version of `feed` listing exactly `cidr`, if it does. */
  versionAt(feed: string, cidr: Cidr): FeedVersion | undefined {
    const id = this.tree.get(cidr);
    return id === NOT_FOUND ? undefined : (this.entries[id] as ListedEntry).feeds.find((v) => v.name === feed);
  }

  /** Lists `cidr` under `version` (its feed's older version there, if any, gives way). */
  list(version: FeedVersion, cidr: Cidr): void {
    let id = this.tree.get(cidr);
    if (id === NOT_FOUND) {
      id = this.freeIds.pop() ?? this.entries.length;
      this.entries[id] = { cidr, feeds: [version] };
      this.tree.set(cidr, id);
      this.count++;
      return;
    }
    const entry = this.entries[id] as ListedEntry;
    const at = entry.feeds.findIndex((v) => v.name === version.name);
    if (at >= 0) entry.feeds[at] = version;
    else {
      entry.feeds.push(version);
      entry.feeds.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
  }

  /** Stops `feed` listing `cidr`; false when it did not. */
  unlist(feed: string, cidr: Cidr): boolean {
    const id = this.tree.get(cidr);
    if (id === NOT_FOUND) return false;
    const entry = this.entries[id] as ListedEntry;
    const left = entry.feeds.filter((v) => v.name !== feed);
    if (left.length === entry.feeds.length) return false;
    entry.feeds = left;
    if (left.length > 0) return true;
    this.tree.delete(cidr);
    this.count--;
    this.entries[id] = undefined;
    this.freeIds.push(id);
    return true;
  }

  /** Whether anything is listed at exactly this CIDR. */
  has(cidr: Cidr): boolean {
    return this.tree.get(cidr) !== NOT_FOUND;
  }

  /** Whether this single address is listed (as a /32 or /128) by some feed: a tree lookup, no string built. */
  listsAddress(ip: Ip): boolean {
    return this.tree.get(ip) !== NOT_FOUND;
  }

  /** The listings of every entry containing `key` (an address, or a network: entries at least as wide), widest first. */
  listingsAround(key: Ip | Cidr): Listing[] {
    if (this.count === 0) return [];
    const out: Listing[] = [];
    for (const id of this.enclosingIds(key)) {
      const entry = this.entries[id] as ListedEntry;
      for (const v of entry.feeds) out.push({ feed: v.name, category: v.category, severity: v.severity, listedAtMs: v.updatedAt });
    }
    return out;
  }

  /** The versions of the feeds listing something around `key`, as one string: equal strings, equal listings. */
  feedsAround(key: Ip | Cidr): string {
    let out = "";
    for (const id of this.enclosingIds(key)) {
      for (const v of (this.entries[id] as ListedEntry).feeds) out += `${v.id},`;
      out += ";";
    }
    return out;
  }

  /** `networks[]` of the detail record of `ip`: each listing around it, widest network first. */
  networksAround(ip: Ip): NetworkView[] {
    if (this.count === 0) return [];
    const out: NetworkView[] = [];
    for (const id of this.enclosingIds(ip)) {
      const entry = this.entries[id] as ListedEntry;
      for (const v of entry.feeds) out.push({ cidr: entry.cidr.text, source: v.name, category: v.category });
    }
    return out;
  }

  private enclosingIds(key: Ip | Cidr): number[] {
    if ("prefixLength" in key) {
      const ip = key.network;
      const out: number[] = [];
      if (ip.version === 4) this.tree.v4.enclosingValues(ip.value, out, key.prefixLength);
      else this.tree.v6.enclosingValues(ip.words, out, key.prefixLength);
      return out;
    }
    return this.tree.enclosingValues(key);
  }
}
