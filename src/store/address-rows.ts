// An `addresses` row as the reputation index keeps it. The same columns exist in the main database and in a
// snapshot, so the server, the offline commands and the snapshot reader all read rows through this.

import { categoryBit, type Category } from "../domain/categories";
import type { AddressRecord } from "../index/reputation-index";
import type { Store } from "./database";

export interface AddressRow {
  ip: string;
  score: number;
  total: number;
  verified: number;
  mask: number;
  lastCategory: string | null;
  firstSeen: number | null;
  lastSeen: number | null;
}

export const ADDRESS_ROW_COLUMNS = `ip, reputation_score AS score, total_reports AS total, verified_reports AS verified,
  categories_mask AS mask, last_category AS lastCategory, first_seen AS firstSeen, last_seen AS lastSeen`;

export function recordOfRow(row: AddressRow): AddressRecord {
  return {
    reputationScore: row.score,
    totalReports: row.total,
    verifiedReports: row.verified,
    categoriesMask: row.mask,
    lastCategoryBit: row.lastCategory ? categoryBit(row.lastCategory as Category) : -1,
    firstSeenMs: row.firstSeen ?? Number.NaN,
    lastSeenMs: row.lastSeen ?? Number.NaN,
  };
}

/** Whether `addresses` has a row for the address (its reports count, or a feed lists it and it was scored). */
export function addressRowExists(store: Store): (ipText: string) => boolean {
  const select = store.sqlite.prepare<{ one: number }, [string]>("SELECT 1 AS one FROM addresses WHERE ip = ?");
  return (ipText) => select.get(ipText) !== null;
}
