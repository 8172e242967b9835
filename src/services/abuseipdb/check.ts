// `check`, `reports` and `check-block` of AbuseIPDB's API v2 (contract 13): what is known of an address or a
// block, from the index (scores, listed networks) and the reports table (counts and pages within maxAgeInDays).

import { addressSpaceOf, isPublicAddress } from "../../domain/address-space";
import type { Clock } from "../../domain/clock";
import { type Cidr, type Ip, firstAndLastOf, formatIpv4, formatIpv6, ipFromWords, ipv4FromNumber, ipv4Mask } from "../../domain/ip";
import { DAY_MS } from "../../domain/scoring";
import type { ReputationIndex } from "../../index/reputation-index";
import { tryParseIp } from "../../domain/ip";
import { NOT_FOUND } from "../../index/radix-common";
import type { AddressReportRow, AddressReportSummary } from "../../store/address-reports";
import type { Allowlist } from "../allowlist/allowlist";
import type { Enrichment } from "../enrichment/enrichment";
import type { Reputation } from "../lookups/reputation";
import { abuseIpdbTime, categoryNumbers, confidenceOf } from "./wire";

/** The most reports a verbose check lists (newest first). */
export const VERBOSE_REPORTS_LIMIT = 10_000;

/** Where the reports of an address come from: the reports table (store/address-reports.ts), or the index alone. */
export interface ReportHistory {
  summarySince(ipText: string, sinceMs: number): AddressReportSummary;
  pageSince(ipText: string, sinceMs: number, limit: number, offset: number): AddressReportRow[];
}

/**
 * The history a read-only snapshot server has: no reports, only each address's record in the index. Counts are
 * the record's counting reports when it was last reported within the window; reporters and report pages are
 * not in a snapshot, so they read 0 and [].
 */
export function indexReportHistory(index: ReputationIndex): ReportHistory {
  return {
    summarySince(ipText, sinceMs) {
      const ip = tryParseIp(ipText);
      const slot = typeof ip === "string" ? NOT_FOUND : index.slotOf(ip);
      if (slot === NOT_FOUND || !(index.lastSeen[slot] >= sinceMs) || index.total[slot] === 0) return { total: 0, reporters: 0, lastAt: null };
      return { total: index.total[slot], reporters: 0, lastAt: index.lastSeen[slot] };
    },
    pageSince: () => [],
  };
}

export interface CheckDeps {
  reputation: Reputation;
  index: ReputationIndex;
  enrichment: Enrichment;
  allowlist: Allowlist;
  reports: ReportHistory;
  clock: Clock;
}

export interface ReportItem {
  reportedAt: string;
  comment: string;
  categories: number[];
  reporterId: number;
  reporterCountryCode: string;
  reporterCountryName: string;
}

const reportItem = (row: AddressReportRow): ReportItem => ({
  reportedAt: abuseIpdbTime(row.createdAt),
  comment: row.description,
  categories: categoryNumbers(row.category),
  reporterId: row.reporterId,
  // Reporters are accounts of this appliance, not placed anywhere: empty strings, as clients type these non-null.
  reporterCountryCode: "",
  reporterCountryName: "",
});

export class AbuseIpdbLookups {
  constructor(private readonly deps: CheckDeps) {}

  private since(maxAgeDays: number): number {
    return this.deps.clock.now() - maxAgeDays * DAY_MS;
  }

  check(ip: Ip, maxAgeDays: number, verbose: boolean): Record<string, unknown> {
    const { reputation, enrichment, allowlist, reports } = this.deps;
    const since = this.since(maxAgeDays);
    const geo = enrichment.lookup(ip);
    const summary = reports.summarySince(ip.text, since);
    const data: Record<string, unknown> = {
      ipAddress: ip.text,
      isPublic: isPublicAddress(ip),
      ipVersion: ip.version,
      isWhitelisted: allowlist.contains(ip),
      abuseConfidenceScore: confidenceOf(reputation.scoreOf(ip)),
      countryCode: geo.countryCode,
    };
    if (verbose) data.countryName = geo.country;
    Object.assign(data, {
      usageType: "",
      isp: geo.isp ?? "",
      domain: "",
      hostnames: [],
      isTor: false,
      totalReports: summary.total,
      numDistinctUsers: summary.reporters,
      lastReportedAt: summary.lastAt === null ? null : abuseIpdbTime(summary.lastAt),
    });
    if (verbose) data.reports = reports.pageSince(ip.text, since, VERBOSE_REPORTS_LIMIT, 0).map(reportItem);
    return data;
  }

  /** `reports`: one page, newest first; the page URLs are absolute, built on `pageUrl`. */
  reports(ip: Ip, maxAgeDays: number, page: number, perPage: number, pageUrl: (page: number) => string): Record<string, unknown> {
    const since = this.since(maxAgeDays);
    const total = this.deps.reports.summarySince(ip.text, since).total;
    const lastPage = Math.max(1, Math.ceil(total / perPage));
    const results = page > lastPage ? [] : this.deps.reports.pageSince(ip.text, since, perPage, (page - 1) * perPage).map(reportItem);
    return {
      total,
      page,
      count: results.length,
      perPage,
      lastPage,
      nextPageUrl: page < lastPage ? pageUrl(page + 1) : null,
      previousPageUrl: page > 1 ? pageUrl(Math.min(page - 1, lastPage)) : null,
      results,
    };
  }

  /** `check-block`: the block's bounds and every reported address inside it, through the radix index. */
  checkBlock(cidr: Cidr, maxAgeDays: number): Record<string, unknown> {
    const { index, enrichment, reports } = this.deps;
    const since = this.since(maxAgeDays);
    const { first, last } = firstAndLastOf(cidr);
    const inside: Ip[] = [];
    const net = cidr.network;
    if (net.version === 4) index.v4.walkSubtree(net.value, cidr.prefixLength, (n, len) => void (len === 32 && inside.push(ipv4FromNumber(n))));
    else index.v6.walkSubtree(net.words, cidr.prefixLength, (words, len) => void (len === 128 && inside.push(ipFromWords(words))));
    const reportedAddress = [];
    for (const ip of inside) {
      const summary = reports.summarySince(ip.text, since);
      if (summary.total === 0) continue;
      const slot = index.slotOf(ip);
      reportedAddress.push({
        ipAddress: ip.text,
        numReports: summary.total,
        mostRecentReport: abuseIpdbTime(summary.lastAt as number),
        abuseConfidenceScore: confidenceOf(index.score[slot]),
        countryCode: enrichment.lookup(ip).countryCode,
      });
    }
    const hostBits = (net.version === 4 ? 32 : 128) - cidr.prefixLength;
    return {
      networkAddress: net.text,
      netmask: net.version === 4 ? formatIpv4(ipv4Mask(cidr.prefixLength)) : formatIpv6([0, 1, 2, 3].map((i) => ipv4Mask(Math.min(32, Math.max(0, cidr.prefixLength - 32 * i))))),
      minAddress: first.text,
      maxAddress: last.text,
      numPossibleHosts: 2 ** hostBits,
      addressSpaceDesc: addressSpaceOf(net),
      reportedAddress,
    };
  }
}
