// The order of `/api/v2/blacklist` (contract 13) over one selection of the index: highest confidence first (lowest
// reputation score), then most recently reported, then the walk's order (IPv4 then IPv6, ascending); an entry
// never reported last in its score. Built once per index state and reused by every request that asks for the same
// list, so the work is done lazily, as far as the requests reach: the entries are only bucketed by score at
// first (one pass), a bucket is sorted when a request first reaches it, and an entry's country is looked up when
// a request first needs it. A firewall asking for the default 10,000 sorts and looks up only what it is sent.
// The server builds it and prepares what a request reaches in steps (`blacklistOrderInSteps`, `prepareInSteps`),
// so a million-entry bucket is never sorted, nor a million countries looked up, in one turn of the event loop.

import { ipFromWords, ipv4FromNumber } from "../../domain/ip";
import type { BlocklistSelection } from "../blocklists/blocklist";
import type { Enrichment } from "../enrichment/enrichment";
import { Pace } from "../../domain/pace";
import { allAtOnce } from "../../domain/steps";
import { sortedInSteps } from "../../domain/sorted-in-steps";
import { type CountryKey, countryKey } from "./country-keys";

/** Not looked up yet (a code's letters are never 0). */
const UNKNOWN: CountryKey = 0;

export class BlacklistOrder {
  /** Entry numbers of the selection, by score (bucket b holds [bucketStart[b], bucketStart[b + 1])). */
  private readonly order: Uint32Array;
  private readonly bucketStart: Uint32Array;
  private readonly bucketSorted: Uint8Array;
  private readonly countries: Uint16Array;

  /** Made by `blacklistOrderInSteps` (or at once: `BlacklistOrder.of`). */
  constructor(
    readonly selection: BlocklistSelection,
    private readonly enrichment: Pick<Enrichment, "lookup">,
    order: Uint32Array,
    bucketStart: Uint32Array,
  ) {
    this.order = order;
    this.bucketStart = bucketStart;
    this.bucketSorted = new Uint8Array(bucketStart.length - 1);
    this.countries = new Uint16Array(selection.count);
  }

  /** The order made at once (a caller that may block: the offline CLI, a test). */
  static of(selection: BlocklistSelection, enrichment: Pick<Enrichment, "lookup">): BlacklistOrder {
    return allAtOnce(blacklistOrderInSteps(selection, enrichment, new Pace(Infinity)));
  }

  get bucketCount(): number {
    return this.bucketSorted.length;
  }

  /** The entries of score `bucket`, most recently reported first (sorted on the first call, at once). */
  bucket(bucket: number): Uint32Array {
    const entries = this.entriesOf(bucket);
    if (this.bucketSorted[bucket] === 0) {
      entries.sort(newestFirst(this.selection.details!.lastSeen));
      this.bucketSorted[bucket] = 1;
    }
    return entries;
  }

  private entriesOf(bucket: number): Uint32Array {
    return this.order.subarray(this.bucketStart[bucket], this.bucketStart[bucket + 1]);
  }

  /**
   * Sorts, a step at a time, the buckets a request for `limit` entries reaches (with a country filter: looks up
   * the countries of their entries first, a step at a time too), so rendering it sorts and looks up nothing more.
   * Each entry sorted or looked up is a unit of work on `pace`.
   */
  *prepareInSteps(limit: number, countries: Uint8Array | null, pace: Pace): Generator<void, void> {
    const lastSeen = this.selection.details!.lastSeen;
    let reached = 0;
    for (let b = 0; b < this.bucketCount && reached < limit; b++) {
      const entries = this.entriesOf(b);
      let listed = entries.length;
      if (countries !== null) {
        listed = 0;
        for (let at = 0; at < entries.length; at++) {
          const known = this.countries[entries[at]] !== UNKNOWN;
          if (countries[this.country(entries[at])] === 1) listed++;
          if (pace.spend(known ? 1 : COUNTRY_LOOKUP_WORK)) yield;
        }
      }
      reached += listed;
      if (listed === 0 || this.bucketSorted[b] === 1) continue;
      // Stable: ties keep the bucket's order, which is the walk's (as `bucket` sorts them).
      const positions = yield* sortedInSteps(entries.length, (x, y) => isNewer(lastSeen[entries[x]], lastSeen[entries[y]]), pace);
      if (this.bucketSorted[b] === 1) continue; // a request rendered meanwhile sorted it at once
      const unsorted = entries.slice();
      for (let k = 0; k < entries.length; k++) entries[k] = unsorted[positions[k]];
      this.bucketSorted[b] = 1;
    }
  }

  /**
   * Whether the country filter (`countryFilter`) lets any entry of score `bucket` through: a bucket it leaves
   * empty is never sorted, so a country nobody is in costs one look at each entry's country.
   */
  anyListed(bucket: number, listed: Uint8Array): boolean {
    for (let at = this.bucketStart[bucket]; at < this.bucketStart[bucket + 1]; at++) {
      if (listed[this.country(this.order[at])] === 1) return true;
    }
    return false;
  }

  /** The country of entry `i` (of its first address, for a network), looked up on the first call. */
  country(i: number): CountryKey {
    let key = this.countries[i];
    if (key === UNKNOWN) {
      key = countryKey(this.enrichment.lookup(this.firstAddress(i)).countryCode);
      this.countries[i] = key;
    }
    return key;
  }

  private firstAddress(i: number) {
    const s = this.selection;
    if (i < s.v4Count) return ipv4FromNumber(s.v4[i]);
    const k = i - s.v4Count;
    return ipFromWords(s.v6.subarray(4 * k, 4 * k + 4));
  }
}

/**
 * The selection's entries bucketed by score (a counting sort: stable, so each bucket starts in the walk's order),
 * a step at a time: each entry of each of the three passes is a unit of work on `pace`.
 */
export function* blacklistOrderInSteps(selection: BlocklistSelection, enrichment: Pick<Enrichment, "lookup">, pace: Pace): Generator<void, BlacklistOrder> {
  const score = selection.details!.score;
  const n = selection.count;
  let maxScore = 0;
  for (let i = 0; i < n; i++) {
    if (score[i] > maxScore) maxScore = score[i];
    if (pace.spend()) yield;
  }
  const bucketStart = new Uint32Array(maxScore + 2);
  for (let i = 0; i < n; i++) {
    bucketStart[score[i] + 1]++;
    if (pace.spend()) yield;
  }
  for (let b = 1; b < bucketStart.length; b++) bucketStart[b] += bucketStart[b - 1];
  const next = bucketStart.slice(0, maxScore + 1);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    order[next[score[i]]++] = i;
    if (pace.spend()) yield;
  }
  return new BlacklistOrder(selection, enrichment, order, bucketStart);
}

/** A country lookup weighs this many units of a step (a search of the range tables, against an array read). */
const COUNTRY_LOOKUP_WORK = 8;

/** Whether lastSeen `x` goes strictly before `y`: newer first, unknown (NaN) last. */
function isNewer(x: number, y: number): boolean {
  if (Number.isNaN(x)) return false;
  return Number.isNaN(y) || x > y;
}

/** Newest lastSeen first, unknown (NaN) last, ties in the walk's order. */
function newestFirst(lastSeen: Float64Array): (a: number, b: number) => number {
  return (a, b) => {
    const x = lastSeen[a];
    const y = lastSeen[b];
    if (x === y) return a - b;
    if (Number.isNaN(x)) return Number.isNaN(y) ? a - b : 1;
    if (Number.isNaN(y)) return -1;
    return y - x;
  };
}
