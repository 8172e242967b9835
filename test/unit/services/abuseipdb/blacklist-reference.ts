// The blacklist as it was built before it was streamed (an object per entry, then JSON.stringify): the oracle the
// streamed answer is compared with, byte for byte. One change: two entries of the same score and the same lastSeen
// (or both never reported) keep the walk's order; the old comparator answered 1 for two unknown times, which
// left their order to the sort's implementation.

import { blocklistFilters } from "../../../../src/domain/blocklist/query";
import { type Ip, type IpVersion, formatIpv4, ipFromWords, ipv4FromNumber } from "../../../../src/domain/ip";
import type { ReputationIndex } from "../../../../src/index/reputation-index";
import type { CidrSet } from "../../../../src/index/cidr-set";
import { abuseIpdbTime, confidenceOf } from "../../../../src/services/abuseipdb/wire";
import { type BlocklistSelection, selectBlocklist } from "../../../../src/services/blocklists/blocklist";

export interface ReferenceQuery {
  confidenceMinimum: number;
  limit: number;
  ipVersion: IpVersion | null;
  onlyCountries: ReadonlySet<string> | null;
  exceptCountries: ReadonlySet<string> | null;
  plaintext: boolean;
}

interface Entry {
  ipAddress: string;
  countryCode: string | null;
  abuseConfidenceScore: number;
  lastReportedAt: string | null;
}

export function referenceBody(index: ReputationIndex, allowlist: CidrSet, countryOf: (ip: Ip) => string | null, query: ReferenceQuery, generatedAt: string): string {
  const entries = referenceEntries(index, allowlist, countryOf, query);
  return query.plaintext ? entries.map((e) => e.ipAddress).join("\n") : JSON.stringify({ meta: { generatedAt }, data: entries });
}

function referenceEntries(index: ReputationIndex, allowlist: CidrSet, countryOf: (ip: Ip) => string | null, query: ReferenceQuery): Entry[] {
  const maxScore = 100 - query.confidenceMinimum;
  const filters = blocklistFilters({ minimumRisk: "LOW", ipVersion: query.ipVersion, maximumScore: maxScore });
  const selection = selectBlocklist(index, allowlist, filters, { details: true });
  const details = selection.details!;
  const buckets: number[][] = Array.from({ length: maxScore + 1 }, () => []);
  for (let i = 0; i < selection.count; i++) buckets[details.score[i]].push(i);
  const lastSeen = details.lastSeen;
  const newestFirst = (a: number, b: number) => {
    const x = lastSeen[a];
    const y = lastSeen[b];
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) return a - b;
    return Number.isNaN(x) ? 1 : Number.isNaN(y) ? -1 : y - x;
  };

  const entries: Entry[] = [];
  for (const bucket of buckets) {
    if (entries.length >= query.limit) break;
    bucket.sort(newestFirst);
    for (const i of bucket) {
      if (entries.length >= query.limit) break;
      const { ip, text } = entryAt(selection, i);
      const countryCode = countryOf(ip);
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
  return entries;
}

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
