// What the feeds list now, in memory (contract section 12): every listed network or address with the feeds that
// list it, found through radix trees, so that "which listings are around this address" costs one tree walk.
// A mirror of `feed_entries` and `feeds`: loaded from the store at start, changed only after the store was.

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

/** A network (or single address) and the names of the feeds listing it. */
interface ListedEntry {
  cidr: Cidr;
  feeds: string[];
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
  private readonly idOf = new Map<string, number>();
  readonly feeds = new Map<string, FeedSettings>();

  static load(feeds: readonly Pick<FeedRow, "name" | "category" | "severity" | "updatedAt">[], entries: Iterable<Pick<FeedEntryRow, "feedName" | "cidr">>): ListedNetworks {
    const listed = new ListedNetworks();
    for (const f of feeds) listed.feeds.set(f.name, { category: f.category as Category, severity: f.severity as Severity, updatedAt: f.updatedAt });
    for (const row of entries) {
      const cidr = tryParseCidr(row.cidr);
      if (typeof cidr !== "string" && listed.feeds.has(row.feedName)) listed.add(row.feedName, cidr);
    }
    listed.tree.compact();
    return listed;
  }

  get size(): number {
    return this.idOf.size;
  }

  /** Every listed network or address. */
  *cidrs(): Generator<Cidr> {
    for (const e of this.entries) if (e) yield e.cidr;
  }

  /** The CIDRs a feed lists. */
  cidrsOf(feed: string): Cidr[] {
    const out: Cidr[] = [];
    for (const e of this.entries) if (e && e.feeds.includes(feed)) out.push(e.cidr);
    return out;
  }

  /** Makes the feed list exactly `cidrs` (distinct) or adds them; returns the CIDRs whose listings changed. */
  setFeed(feed: string, settings: FeedSettings, cidrs: readonly Cidr[], replace: boolean): Cidr[] {
    const before = this.feeds.get(feed);
    this.feeds.set(feed, settings);
    const dropped: Cidr[] = [];
    if (replace) {
      const wanted = new Set(cidrs.map((c) => c.text));
      for (const cidr of this.cidrsOf(feed)) {
        if (!wanted.has(cidr.text)) {
          this.drop(feed, cidr);
          dropped.push(cidr);
        }
      }
    }
    // New settings (severity, category, time: every import) change every listing of the feed.
    if (!before || before.category !== settings.category || before.severity !== settings.severity || before.updatedAt !== settings.updatedAt) {
      for (const cidr of cidrs) this.add(feed, cidr);
      return [...dropped, ...this.cidrsOf(feed)];
    }
    const changed = dropped;
    for (const cidr of cidrs) if (this.add(feed, cidr)) changed.push(cidr);
    return changed;
  }

  /** Forgets a feed; returns the CIDRs it listed. */
  removeFeed(feed: string): Cidr[] {
    const gone = this.cidrsOf(feed);
    for (const cidr of gone) this.drop(feed, cidr);
    this.feeds.delete(feed);
    return gone;
  }

  /** Whether anything is listed at exactly this CIDR. */
  has(cidr: Cidr): boolean {
    return this.idOf.has(cidr.text);
  }

  /** Whether this single address is listed (as a /32 or /128) by some feed: a tree lookup, no string built. */
  listsAddress(ip: Ip): boolean {
    return this.tree.get(ip) !== NOT_FOUND;
  }

  /** The listings of every entry containing `key` (an address, or a network: entries at least as wide), widest first. */
  listingsAround(key: Ip | Cidr): Listing[] {
    if (this.idOf.size === 0) return [];
    const out: Listing[] = [];
    for (const id of this.enclosingIds(key)) {
      const entry = this.entries[id] as ListedEntry;
      for (const feed of entry.feeds) {
        const s = this.feeds.get(feed) as FeedSettings;
        out.push({ feed, category: s.category, severity: s.severity, listedAtMs: s.updatedAt });
      }
    }
    return out;
  }

  /** The names of the feeds listing something around `key`, as one string: equal strings, equal listings. */
  feedsAround(key: Ip | Cidr): string {
    let out = "";
    for (const id of this.enclosingIds(key)) out += `${(this.entries[id] as ListedEntry).feeds.join(",")};`;
    return out;
  }

  /** `networks[]` of the detail record of `ip`: each listing around it, widest network first. */
  networksAround(ip: Ip): NetworkView[] {
    if (this.idOf.size === 0) return [];
    const out: NetworkView[] = [];
    for (const id of this.enclosingIds(ip)) {
      const entry = this.entries[id] as ListedEntry;
      for (const feed of entry.feeds) out.push({ cidr: entry.cidr.text, source: feed, category: (this.feeds.get(feed) as FeedSettings).category });
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

  private add(feed: string, cidr: Cidr): boolean {
    let id = this.idOf.get(cidr.text);
    if (id === undefined) {
      id = this.freeIds.pop() ?? this.entries.length;
      this.entries[id] = { cidr, feeds: [feed] };
      this.idOf.set(cidr.text, id);
      this.tree.set(cidr, id);
      return true;
    }
    const entry = this.entries[id] as ListedEntry;
    if (entry.feeds.includes(feed)) return false;
    entry.feeds.push(feed);
    entry.feeds.sort();
    return true;
  }

  private drop(feed: string, cidr: Cidr): void {
    const id = this.idOf.get(cidr.text);
    if (id === undefined) return;
    const entry = this.entries[id] as ListedEntry;
    entry.feeds = entry.feeds.filter((f) => f !== feed);
    if (entry.feeds.length > 0) return;
    this.tree.delete(cidr);
    this.idOf.delete(cidr.text);
    this.entries[id] = undefined;
    this.freeIds.push(id);
  }
}
