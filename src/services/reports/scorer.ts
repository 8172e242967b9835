// Recomputes one address's state (contract 5.7) and writes it to the `addresses` table, inside the caller's
// transaction: from its reports in the retention window while they are few (at most the sums threshold), else from
// the running sums of its reporters (score-sums.ts), so the cost does not grow with the reports it already has;
// an address found past the threshold gets its sums made then. The in-memory index is updated by the caller after
// the commit, from the record this returns, so the index never shows what the store does not hold. The same
// reading serves the read-only offline commands (`persist: false`) and the snapshot export.

import { addressWriter } from "../../store/address-rows";
import { type CountingReportRow, countingReportsSql } from "../../store/reports";
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
import {
  nextRescoreDueOfSums,
  reportTerm,
  type ReporterSum,
  scoreOfSums,
  SUMS_ABOVE_REPORTS,
  type SummedAddress,
  type SumUnits,
  sumUnitsOf,
  sumsUsableAt,
  unitsMatch,
} from "../../domain/running-sums";
import { scoreSumsOf } from "../../store/score-sums";
import type { AddressRecord } from "../../index/reputation-index";
import { inTransaction, type Store } from "../../store/database";

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
  /**
   * For a large import, which scores its batches from the reports itself: makes the sums of an address it found
   * with more than the threshold of reports in its window at `nowMs` (a writing scorer only), so that the next
   * report about it does not read them all. Inside the import's transaction, after its reports are written.
   */
  readonly sumIfMany?: (ipText: string, nowMs: number, reportsInWindow: number) => void;
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
  /**
   * When the sums are not in this scorer's units (the scoring parameters changed), a writing scorer sums every
   * report again, with this epoch (now); default: the formula is used until a scorer that may rebuild does.
   */
  rebuildSumsAtMs?: number;
  /**
   * An address with more reports than this in its retention window (any state) is summed from then on; default
   * SUMS_ABOVE_REPORTS (tests use small ones to cross it often).
   */
  sumsAboveReports?: number;
}

export function createAddressScorer(store: Store, params: ScoringParameters, options: ScorerOptions = {}): AddressScorer {
  const persist = options.persist !== false;
  const sums = scoreSumsOf(store);
  const sumsAbove = options.sumsAboveReports ?? SUMS_ABOVE_REPORTS;
  const listingsAround = options.listingsAround;
  const listingReportsOf = listingsAround ? (ip: Ip): ScoredReport[] => listingReports(listingsAround(ip)) : undefined;
  const withListings = (ip: Ip, reports: ScoredReport[]): ScoredReport[] => {
    if (listingReportsOf) for (const r of listingReportsOf(ip)) reports.push(r);
    return reports;
  };
  const beforeListings = options.beforeListings ?? (() => {});
  // Handed out for callers that score on their own (a large import), so checked on each call, as before.
  const listingsOf = listingReportsOf && ((ip: Ip): ScoredReport[] => (beforeListings(), listingReportsOf(ip)));
  if (persist && options.rebuildSumsAtMs !== undefined) {
    const units = sums.unitsNow();
    if (units === null || !unitsMatch(units, params) || !sumsUsableAt(units, options.rebuildSumsAtMs, params)) {
      inTransaction(store, () => sums.rebuild(sumUnitsOf(params, Math.floor(options.rebuildSumsAtMs!))));
    }
  }

  /**
   * Each address's counting reports, read at the earliest cutoff of all and then cut at its own, and how many
   * reports (any state) it has in its own window.
   */
  const reportsOfAll = (addresses: readonly RescoreOf[]): { reports: ScoredReport[]; inWindow: number }[] => {
    let cutoff = Number.POSITIVE_INFINITY;
    for (const a of addresses) cutoff = Math.min(cutoff, retentionCutoffMs(a.nowMs, params));
    const byIp = new Map<string, CountingReportRow[]>();
    for (const row of sums.reportsInWindow(addresses.map((a) => a.ip.text), cutoff)) {
      const list = byIp.get(row.ip);
      if (list === undefined) byIp.set(row.ip, [row]);
      else list.push(row);
    }
    return addresses.map(({ ip, nowMs }) => {
      const own = retentionCutoffMs(nowMs, params);
      const reports: ScoredReport[] = [];
      let inWindow = 0;
      for (const row of byIp.get(ip.text) ?? []) {
        if (row.createdAtMs < own) continue;
        inWindow++;
        if (row.status === "pending" || row.status === "verified") reports.push(scoredReportOf(row));
      }
      return { reports: withListings(ip, reports), inWindow };
    });
  };

  /**
   * The address's sums at `nowMs`, with the reports that passed retention taken out (and, when `write`, their
   * floor moved so they are not read again); null when the sums cannot answer for this time.
   */
  const summedOf = (ip: Ip, nowMs: number, units: SumUnits, write: boolean): SummedAddress | null => {
    const cutoff = retentionCutoffMs(nowMs, params);
    const rows = sums.reportersOf(ip.text);
    let categories: Map<string, number> | null = null;
    let tookOut = false;
    const reporters: ReporterSum[] = [];
    for (const row of rows) {
      // Cut at a later time than asked (an earlier time is asked about), or a report dated after now (its age
      // is 0 in the formula, not negative): the reports answer.
      if (row.floor > cutoff || (row.reports > 0 && row.newest > nowMs)) return null;
      if (row.reports <= 0 || row.oldest >= cutoff) {
        reporters.push(row);
        continue;
      }
      let weight = 0;
      let reports = 0;
      let verified = 0;
      const gone = new Map<string, number>();
      for (const r of sums.pastReports(ip.text, row.reporterId, Math.max(row.floor, row.oldest), cutoff)) {
        weight += reportTerm(units, r.severity as Severity, r.status === "verified", r.createdAtMs);
        reports++;
        if (r.status === "verified") verified++;
        gone.set(r.category, (gone.get(r.category) ?? 0) + 1);
      }
      const left = row.reports - reports;
      const next: ReporterSum = { reporterId: row.reporterId, weight: left <= 0 ? 0 : Math.max(0, row.weight - weight), reports: left, verified: row.verified - verified };
      tookOut = true;
      categories ??= sums.categoryCountsOf(ip.text);
      for (const [category, n] of gone) categories.set(category, (categories.get(category) ?? 0) - n);
      if (write) sums.takeOut(ip.text, row.reporterId, weight, reports, verified, sums.oldestCountingFrom(ip.text, row.reporterId, cutoff) ?? cutoff, cutoff, gone);
      reporters.push(next);
    }
    if (write && tookOut) sums.dropEmptyOf(ip.text);
    categories ??= sums.categoryCountsOf(ip.text);
    let categoriesMask = 0;
    for (const [category, n] of categories) if (n > 0) categoriesMask |= 1 << categoryBit(category as Category);
    const newest = sums.newestCountingSince(ip.text, cutoff);
    return {
      reporters,
      categoriesMask,
      firstSeenMs: newest === null ? null : sums.firstCountingSince(ip.text, cutoff),
      lastSeenMs: newest?.createdAtMs ?? null,
      lastCategory: (newest?.category ?? null) as Category | null,
      listings: listingReportsOf ? listingReportsOf(ip) : [],
    };
  };

  /**
   * Each address's score at its time, with a way to its rescore due time: from the sums for a summed address
   * where they answer, else from its reports; when `write`, an address past the threshold is summed from now on.
   */
  /** Whether sums in `units` answer for a time `nowMs` (they are in this scorer's parameters, and usable then). */
  const sumsAnswer = (units: SumUnits | null, nowMs: number): units is SumUnits => units !== null && unitsMatch(units, params) && sumsUsableAt(units, nowMs, params);

  const scoreAll = (addresses: readonly RescoreOf[], write: boolean): { score: AddressScore; dueMs: () => number | null }[] => {
    beforeListings();
    const units = sums.unitsNow();
    const summedIps = sums.summedAmong(addresses.map((a) => a.ip.text));
    const out: { score: AddressScore; dueMs: () => number | null }[] = new Array(addresses.length);
    const fromReports: number[] = [];
    for (let i = 0; i < addresses.length; i++) {
      const { ip, nowMs } = addresses[i]!;
      const summed = summedIps.has(ip.text) && sumsAnswer(units, nowMs) ? summedOf(ip, nowMs, units, write) : null;
      if (summed === null) fromReports.push(i);
      else out[i] = { score: scoreOfSums(summed, units!, nowMs, params), dueMs: () => nextRescoreDueOfSums(summed, units!, nowMs, params) };
    }
    if (fromReports.length > 0) {
      const read = reportsOfAll(fromReports.map((i) => addresses[i]!));
      fromReports.forEach((i, k) => {
        const { ip, nowMs } = addresses[i]!;
        const { reports, inWindow } = read[k]!;
        // Made from the reports just read past, in this transaction: the triggers add what comes after.
        if (write && inWindow > sumsAbove && !summedIps.has(ip.text) && sumsAnswer(units, nowMs)) {
          sums.materialise(ip.text, retentionCutoffMs(nowMs, params));
        }
        out[i] = { score: scoreReports(reports, nowMs, params), dueMs: () => nextRescoreDueMs(reports, nowMs, params) };
      });
    }
    return out;
  };
  const evaluate = (ip: Ip, nowMs: number) => {
    const [{ score, dueMs }] = scoreAll([{ ip, nowMs }], false) as [{ score: AddressScore; dueMs: () => number | null }];
    return { record: recordOfScore(score), rescoreDueMs: score.totalReports === 0 ? null : dueMs() };
  };
  if (!persist) {
    return {
      evaluate,
      rescore: (ip, nowMs) => recordOfScore(scoreAll([{ ip, nowMs }], false)[0]!.score),
      rescoreAll: (addresses) => scoreAll(addresses, false).map(({ score }) => recordOfScore(score)),
      listingsOf,
    };
  }
  const { upsert, remove } = addressWriter(store);
  const sumIfMany = (ipText: string, nowMs: number, reportsInWindow: number): void => {
    if (reportsInWindow <= sumsAbove) return;
    const units = sums.unitsNow();
    if (!sumsAnswer(units, nowMs) || sums.summedAmong([ipText]).size > 0) return;
    sums.materialise(ipText, retentionCutoffMs(nowMs, params));
  };

  const write = (ip: Ip, nowMs: number, score: AddressScore, dueMs: () => number | null): AddressRecord | null => {
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
      dueMs(),
    );
    return record;
  };
  return {
    evaluate,
    rescore: (ip, nowMs) => {
      const [{ score, dueMs }] = scoreAll([{ ip, nowMs }], true) as [{ score: AddressScore; dueMs: () => number | null }];
      return write(ip, nowMs, score, dueMs);
    },
    rescoreAll: (addresses) => scoreAll(addresses, true).map(({ score, dueMs }, i) => write(addresses[i]!.ip, addresses[i]!.nowMs, score, dueMs)),
    listingsOf,
    sumIfMany,
  };
}
