// Recomputes one address's state from its counting reports (contract 5.7) and writes it to the `addresses`
// table, inside the caller's transaction. The in-memory index is updated by the caller after the commit, from
// the record this returns, so the index never shows what the store does not hold. The same reading of reports
// serves the read-only offline commands (`persist: false`) and the snapshot export.

import { addressWriter } from "../../store/address-rows";
import { type CountingReportRow, countingReportsOf, countingReportsOfAddresses, countingReportsSql } from "../../store/reports";
import { categoryBit, type Category } from "../../domain/categories";
import type { Ip } from "../../domain/ip";
import {
  nextRescoreDueMs,
  retentionCutoffMs,
  scoreReports,
  type AddressScore,
  type ReportStatus,
  type ScoredReport,
  type ScoringParameters,
  type Severity,
} from "../../domain/scoring";
import { type Listing, listingReports } from "../../domain/feeds";
import type { AddressRecord } from "../../index/reputation-index";
import type { Store } from "../../store/database";

export { countingReportsSql, type CountingReportRow };

export function scoredReportOf(row: CountingReportRow): ScoredReport {
  return {
    id: row.id,
    reporterId: row.reporterId,
    severity: row.severity as Severity,
    createdAtMs: row.createdAtMs,
    status: row.status as ReportStatus,
    category: row.category as Category,
  };
}

/** The index's record of a score, or null when no report counts (the address leaves the index). */
export function recordOfScore(score: AddressScore): AddressRecord | null {
  if (score.totalReports === 0) return null;
  return {
    reputationScore: score.reputationScore,
    totalReports: score.totalReports,
    verifiedReports: score.verifiedReports,
    categoriesMask: score.categoriesMask,
    lastCategoryBit: score.lastCategory ? categoryBit(score.lastCategory) : -1,
    firstSeenMs: score.firstSeenMs ?? Number.NaN,
    lastSeenMs: score.lastSeenMs ?? Number.NaN,
  };
}

export interface AddressScorer {
  /**
   * Recomputes `ip` at `nowMs` and (unless created with `persist: false`) writes its row, or deletes it when
   * nothing counts any more. Returns the record for the index, or null when the address left it. Call inside a
   * transaction.
   */
  rescore(ip: Ip, nowMs: number): AddressRecord | null;
  /**
   * rescore() of several distinct addresses, each at its own time, reading their reports in one statement; the
   * records in the same order.
   */
  rescoreAll(addresses: readonly RescoreOf[]): (AddressRecord | null)[];
  /** What rescore() would write for `ip` at `nowMs`, written nowhere: the record and the row's rescore due time. */
  evaluate(ip: Ip, nowMs: number): { record: AddressRecord | null; rescoreDueMs: number | null };
  /**
   * The reports the feeds' listings around `ip` count as (contract 12), as rescore() adds them to the address's
   * own; absent when this scorer counts no listings. A large import scores its batches with them.
   */
  readonly listingsOf?: (ip: Ip) => ScoredReport[];
}

export interface RescoreOf {
  ip: Ip;
  nowMs: number;
}

export interface ScorerOptions {
  /** false: compute only, write nothing (read-only offline commands). */
  persist?: boolean;
  /** The feeds' listings around an address (contract 12): they count like verified reports. */
  listingsAround?: (ip: Ip) => Listing[];
  /**
   * Brings the listings up to date with what other processes committed; called once at the start of each
   * rescore, rescoreAll and evaluate (inside a write transaction nobody else commits, so once is enough).
   */
  beforeListings?: () => void;
}

export function createAddressScorer(store: Store, params: ScoringParameters, options: ScorerOptions = {}): AddressScorer {
  const selectCounting = countingReportsOf(store);
  const selectCountingOfAll = countingReportsOfAddresses(store);
  const listingsAround = options.listingsAround;
  const listingReportsOf = listingsAround ? (ip: Ip): ScoredReport[] => listingReports(listingsAround(ip)) : undefined;
  const withListings = (ip: Ip, reports: ScoredReport[]): ScoredReport[] => {
    if (listingReportsOf) for (const r of listingReportsOf(ip)) reports.push(r);
    return reports;
  };
  const beforeListings = options.beforeListings ?? (() => {});
  // Handed out for callers that score on their own (a large import), so checked on each call, as before.
  const listingsOf = listingReportsOf && ((ip: Ip): ScoredReport[] => (beforeListings(), listingReportsOf(ip)));
  const reportsOf = (ip: Ip, nowMs: number): ScoredReport[] => {
    beforeListings();
    return withListings(ip, selectCounting.all(ip.text, retentionCutoffMs(nowMs, params)).map(scoredReportOf));
  };
  /** Each address's reports, read at the earliest cutoff of all and then cut at its own. */
  const reportsOfAll = (addresses: readonly RescoreOf[]): ScoredReport[][] => {
    beforeListings();
    let cutoff = Number.POSITIVE_INFINITY;
    for (const a of addresses) cutoff = Math.min(cutoff, retentionCutoffMs(a.nowMs, params));
    const byIp = new Map<string, CountingReportRow[]>();
    for (const row of selectCountingOfAll.all(JSON.stringify(addresses.map((a) => a.ip.text)), cutoff)) {
      const rows = byIp.get(row.ip);
      if (rows === undefined) byIp.set(row.ip, [row]);
      else rows.push(row);
    }
    return addresses.map(({ ip, nowMs }) => {
      const own = retentionCutoffMs(nowMs, params);
      const reports: ScoredReport[] = [];
      for (const row of byIp.get(ip.text) ?? []) if (row.createdAtMs >= own) reports.push(scoredReportOf(row));
      return withListings(ip, reports);
    });
  };
  const evaluate = (ip: Ip, nowMs: number) => {
    const reports = reportsOf(ip, nowMs);
    return { record: recordOfScore(scoreReports(reports, nowMs, params)), rescoreDueMs: nextRescoreDueMs(reports, nowMs, params) };
  };
  if (options.persist === false) {
    return {
      evaluate,
      rescore: (ip, nowMs) => recordOfScore(scoreReports(reportsOf(ip, nowMs), nowMs, params)),
      rescoreAll: (addresses) => reportsOfAll(addresses).map((reports, i) => recordOfScore(scoreReports(reports, addresses[i]!.nowMs, params))),
      listingsOf,
    };
  }
  const { upsert, remove } = addressWriter(store);

  const write = (ip: Ip, nowMs: number, reports: ScoredReport[]): AddressRecord | null => {
    const score = scoreReports(reports, nowMs, params);
    const record = recordOfScore(score);
    if (record === null) {
      remove.run(ip.text);
      return null;
    }
    upsert.run(
      ip.text,
      ip.version,
      score.reputationScore,
      score.totalReports,
      score.verifiedReports,
      score.categoriesMask,
      score.lastCategory,
      score.firstSeenMs,
      score.lastSeenMs,
      nowMs,
      nextRescoreDueMs(reports, nowMs, params),
    );
    return record;
  };
  return {
    evaluate,
    rescore: (ip, nowMs) => write(ip, nowMs, reportsOf(ip, nowMs)),
    rescoreAll: (addresses) => reportsOfAll(addresses).map((reports, i) => write(addresses[i]!.ip, addresses[i]!.nowMs, reports)),
    listingsOf,
  };
}
