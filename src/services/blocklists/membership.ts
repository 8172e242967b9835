// Whether one address is on a blocklist, decided as the list's walk (selectBlocklist) decides, without walking:
// its own entry or a listed network around it passes the filters, and no allowlisted network holds it. The DNS
// blocklist asks this for every query; a property test holds it equal to the walk's list.

import type { BlocklistFilters } from "../../domain/blocklist/query";
import type { RiskCode } from "../../domain/risk";
import type { CidrSet } from "../../index/cidr-set";
import { NOT_FOUND } from "../../index/radix-common";
import type { ReputationIndex } from "../../index/reputation-index";

/** The one test the walk applies to each entry (address or listed network): its risk, score and categories. */
export function entryMatches(index: ReputationIndex, slot: number, filters: BlocklistFilters): boolean {
  if (index.risk[slot] < filters.minimumRiskCode || index.score[slot] > filters.maximumScore) return false;
  return filters.categoriesMask === 0 || (index.categories[slot] & filters.categoriesMask) !== 0;
}

/** What a listed address's answer tells, filled by listingOf: reused from query to query. */
export interface ListingScratch {
  /** The highest risk of its own entry and the networks around it. */
  risk: RiskCode;
  /** Its own entry's categories and those of the networks around it. */
  categories: number;
  /** The slot a lookup answers from (its own entry, else the narrowest network): score and counts. */
  slot: number;
}

export function listingScratch(): ListingScratch {
  return { risk: 0, categories: 0, slot: NOT_FOUND };
}

/** Prefixes around one address at most: /0../32 or /0../128. */
const enclosing = new Int32Array(129);

/** Whether the IPv4 address `value` is on the list `filters` give; when it is, `out` tells the answer's facts. */
export function listingOfV4(index: ReputationIndex, allowlist: CidrSet, filters: BlocklistFilters, value: number, out: ListingScratch): boolean {
  if (index.networkCount === 0) {
    const own = index.v4.get(value);
    if (own === NOT_FOUND || !entryMatches(index, own, filters)) return false;
    if (allowlist.size > 0 && allowlist.containsV4(value)) return false;
    out.risk = index.risk[own] as RiskCode;
    out.categories = index.categories[own];
    out.slot = own;
    return true;
  }
  const n = index.v4.enclosingValues(value, enclosing);
  return gathered(index, filters, n, out) && !(allowlist.size > 0 && allowlist.containsV4(value));
}

/** The same for an IPv6 address (four words). */
export function listingOfV6(index: ReputationIndex, allowlist: CidrSet, filters: BlocklistFilters, words: ArrayLike<number>, out: ListingScratch): boolean {
  const n = index.networkCount === 0 ? oneOrNone(index.v6.get(words)) : index.v6.enclosingValues(words, enclosing);
  return gathered(index, filters, n, out) && !(allowlist.size > 0 && allowlist.containsV6(words));
}

function oneOrNone(slot: number): number {
  if (slot === NOT_FOUND) return 0;
  enclosing[0] = slot;
  return 1;
}

/** Over the `n` entries in `enclosing` (widest first): whether one passes the filters; `out` from all of them. */
function gathered(index: ReputationIndex, filters: BlocklistFilters, n: number, out: ListingScratch): boolean {
  let listed = false;
  let risk = 0;
  let categories = 0;
  for (let i = 0; i < n; i++) {
    const slot = enclosing[i];
    if (!listed && entryMatches(index, slot, filters)) listed = true;
    if (index.risk[slot] > risk) risk = index.risk[slot];
    categories |= index.categories[slot];
  }
  if (!listed) return false;
  out.risk = risk as RiskCode;
  out.categories = categories;
  out.slot = enclosing[n - 1];
  return true;
}
