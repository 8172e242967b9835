// `blacklist` of AbuseIPDB's API v2 (contract 13): the addresses (and listed networks) at or above a confidence,
// highest confidence first, then most recently reported; allowlisted ones never appear. Read from the same index
// walk as `/v1/ip/blocklist`, so the two lists agree.

import type { Clock } from "../../domain/clock";
import { blocklistFilters } from "../../domain/blocklist/query";
import { type Ip, type IpVersion, formatIpv4, ipFromWords, ipv4FromNumber } from "../../domain/ip";
import type { ReputationIndex } from "../../index/reputation-index";
import type { Allowlist } from "../allowlist/allowlist";
import { type BlocklistSelection, selectBlocklist } from "../blocklists/blocklist";
import type { Enrichment } from "../enrichment/enrichment";
import { abuseIpdbTime, confidenceOf } from "./wire";

export const DEFAULT_BLACKLIST_LIMIT = 10_000;
export const DEFAULT_CONFIDENCE_MINIMUM = 100;

export interface BlacklistQuery {
  /** 25..100. */
  confidenceMinimum: number;
  limit: number;
  ipVersion: IpVersion | null;
  /** Upper-case ISO country codes; null when not filtered. */
  onlyCountries: ReadonlySet<string> | null;
  exceptCountries: ReadonlySet<string> | null;
}

export interface BlacklistEntry {
  ipAddress: string;
  countryCode: string | null;
  abuseConfidenceScore: number;
  lastReportedAt: string | null;
}

export interface BlacklistDeps {
  index: ReputationIndex;
  allowlist: Allowlist;
  enrichment: Enrichment;
  clock: Clock;
  /** Rescores what retention expired, before the walk (as the blocklist does). */
  expireDue: () => void;
}

export function selectBlacklist(deps: BlacklistDeps, query: BlacklistQuery): { generatedAt: string; entries: BlacklistEntry[] } {
  deps.expireDue();
  const maxScore = 100 - query.confidenceMinimum;
  const filters = blocklistFilters({ minimumRisk: "LOW", ipVersion: query.ipVersion, maximumScore: maxScore });
  const selection = selectBlocklist(deps.index, deps.allowlist.set, filters, { details: true });
  const details = selection.details!;
  // Entries by score (0 = most confident first), each bucket newest report first.
  const buckets: number[][] = Array.from({ length: maxScore + 1 }, () => []);
  for (let i = 0; i < selection.count; i++) buckets[details.score[i]].push(i);
  const lastSeen = details.lastSeen;
  const newestFirst = (a: number, b: number) => (Number.isNaN(lastSeen[a]) ? 1 : Number.isNaN(lastSeen[b]) ? -1 : lastSeen[b] - lastSeen[a]);

  const entries: BlacklistEntry[] = [];
  for (const bucket of buckets) {
    if (entries.length >= query.limit) break;
    bucket.sort(newestFirst);
    for (const i of bucket) {
      if (entries.length >= query.limit) break;
      const { ip, text } = entryAt(selection, i);
      const countryCode = deps.enrichment.lookup(ip).countryCode;
      if (query.onlyCountries !== null && (countryCode === null || !query.onlyCountries.has(countryCode))) continue;
      if (query.exceptCountries !== null && countryCode !== null && query.exceptCountries.has(countryCode)) continue;
      entries.push({
        ipAddress: text,
        countryCode,
        abuseConfidenceScore: confidenceOf(details.score[i]),
        lastReportedAt: Number.isNaN(lastSeen[i]) ? null : abuseIpdbTime(lastSeen[i]),
      });
    }
  }
  return { generatedAt: abuseIpdbTime(deps.clock.now()), entries };
}

/** Entry i of a selection: its (first) address, and its text (a listed network with its prefix). */
function entryAt(selection: BlocklistSelection, i: number): { ip: Ip; text: string } {
  if (i < selection.v4Count) {
    const prefix = selection.v4Prefix === null ? 32 : selection.v4Prefix[i];
    const ip = ipv4FromNumber(selection.v4[i]);
    return { ip, text: prefix === 32 ? formatIpv4(selection.v4[i]) : `${ip.text}/${prefix}` };
  }
  const k = i - selection.v4Count;
  const ip = ipFromWords(selection.v6.subarray(4 * k, 4 * k + 4));
  const prefix = selection.v6Prefix === null ? 128 : selection.v6Prefix[k];
  return { ip, text: prefix === 128 ? ip.text : `${ip.text}/${prefix}` };
}
