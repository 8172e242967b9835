// The index records that listings give (contract 12): a listed network's record (the listings around it) and a
// listed address's when nobody reported it. Used when a feed changes, at start, offline and in snapshots.

import { scoreListings } from "../../domain/feeds";
import type { Cidr, Ip } from "../../domain/ip";
import type { ScoringParameters } from "../../domain/scoring";
import type { AddressRecord, ReputationIndex } from "../../index/reputation-index";
import type { ListedNetworks } from "./listed-networks";

/** The record of the listings around `key` alone; null when nothing is listed around it. */
export function listingRecord(listed: ListedNetworks, key: Ip | Cidr, nowMs: number, params: ScoringParameters): AddressRecord | null {
  const listings = listed.listingsAround(key);
  if (listings.length === 0) return null;
  const s = scoreListings(listings, nowMs, params);
  return {
    reputationScore: s.reputationScore,
    totalReports: s.listings,
    verifiedReports: s.listings,
    categoriesMask: s.categoriesMask,
    lastCategoryBit: -1,
    // Listings date nothing a retention check should act on; lastSeen tells when the feed last said so.
    firstSeenMs: Number.NaN,
    lastSeenMs: s.lastListedMs,
  };
}

export const isFullLength = (cidr: Cidr): boolean => cidr.prefixLength === (cidr.version === 4 ? 32 : 128);

/**
 * Puts every listing into an index built from the `addresses` rows: each listed network with its record, and
 * each listed address that has no row (one with a row was scored with its listings already).
 */
export function putListingsInto(index: ReputationIndex, listed: ListedNetworks, nowMs: number, params: ScoringParameters, rowsAmong: (ipTexts: readonly string[]) => Set<string>): void {
  const withRow = rowsAmong([...listed.cidrs()].filter(isFullLength).map((c) => c.network.text));
  for (const cidr of listed.cidrs()) {
    if (isFullLength(cidr)) {
      if (withRow.has(cidr.network.text)) continue;
      const record = listingRecord(listed, cidr.network, nowMs, params);
      if (record) index.upsert(cidr.network, record);
    } else {
      const record = listingRecord(listed, cidr, nowMs, params);
      if (record) index.upsertNetwork(cidr, record);
    }
  }
}
