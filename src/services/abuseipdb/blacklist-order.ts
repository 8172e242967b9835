// The order of `/api/v2/blacklist` (contract 13) over one selection of the index: highest confidence first (lowest
// reputation score), then most recently reported, then the walk's order (IPv4 then IPv6, ascending); an entry
// never reported last in its score. Built once per index state and reused by every request that asks for the same
// list, so the work is done lazily, as far as the requests reach: the entries are only bucketed by score at
// first (one pass), a bucket is sorted when a request first reaches it, and an entry's country is looked up when
// a request first needs it. A firewall asking for the default 10,000 sorts and looks up only what it is sent.

import { ipFromWords, ipv4FromNumber } from "../../domain/ip";
import type { BlocklistSelection } from "../blocklists/blocklist";
import type { Enrichment } from "../enrichment/enrichment";
import { type CountryKey, countryKey } from "./country-keys";

/** Not looked up yet (a code's letters are never 0). */
const UNKNOWN: CountryKey = 0;

export class BlacklistOrder {
  /** Entry numbers of the selection, by score (bucket b holds [bucketStart[b], bucketStart[b + 1])). */
  private readonly order: Uint32Array;
  private readonly bucketStart: Uint32Array;
  private readonly bucketSorted: Uint8Array;
  private readonly countries: Uint16Array;

  constructor(
    readonly selection: BlocklistSelection,
    private readonly enrichment: Pick<Enrichment, "lookup">,
  ) {
    const score = selection.details!.score;
    const n = selection.count;
    let maxScore = 0;
    for (let i = 0; i < n; i++) if (score[i] > maxScore) maxScore = score[i];
    // A counting sort by score: stable, so each bucket starts in the walk's order.
    this.bucketStart = new Uint32Array(maxScore + 2);
    for (let i = 0; i < n; i++) this.bucketStart[score[i] + 1]++;
    for (let b = 1; b < this.bucketStart.length; b++) this.bucketStart[b] += this.bucketStart[b - 1];
    const next = this.bucketStart.slice(0, maxScore + 1);
    this.order = new Uint32Array(n);
    for (let i = 0; i < n; i++) this.order[next[score[i]]++] = i;
    this.bucketSorted = new Uint8Array(maxScore + 1);
    this.countries = new Uint16Array(n);
  }

  get bucketCount(): number {
    return this.bucketSorted.length;
  }

  /** The entries of score `bucket`, most recently reported first (sorted on the first call). */
  bucket(bucket: number): Uint32Array {
    const entries = this.order.subarray(this.bucketStart[bucket], this.bucketStart[bucket + 1]);
    if (this.bucketSorted[bucket] === 0) {
      entries.sort(newestFirst(this.selection.details!.lastSeen));
      this.bucketSorted[bucket] = 1;
    }
    return entries;
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
