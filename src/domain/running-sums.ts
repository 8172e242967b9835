// Contract 5.7 from running sums instead of the reports: decay is a common factor, so each reporter's Σw at any
// time is its sum referred to a fixed epoch times 2^((epoch − now) / halfLife), and the address's Σw the capped
// reporters' sums added up. Pure: the sums, the listings and the time are arguments.

import { type AddressScore, DAY_MS, firstChangeMs, scoreFromWeight, scoreReports, type ScoredReport, type ScoringParameters, type Severity } from "./scoring";
import { riskLevelOf } from "./risk";

/**
 * An address is summed once it has more reports than this in its retention window: below, scoring reads its
 * reports (as few as this), and a report about it costs no write beyond its own row; above, one row per reporter.
 */
export const SUMS_ABOVE_REPORTS = 64;

/** The units the sums are in: the weights and half-life they were summed with, and their epoch. */
export interface SumUnits {
  readonly epochMs: number;
  readonly halfLifeMs: number;
  readonly severityWeights: Readonly<Record<Severity, number>>;
  readonly verifiedMultiplier: number;
}

/** One reporter's counting reports of one address, summed. */
export interface ReporterSum {
  readonly reporterId: number;
  /** Σ severityWeight × (verified ? multiplier : 1) × 2^((createdAt − epoch) / halfLife). */
  readonly weight: number;
  readonly reports: number;
  readonly verified: number;
}

/**
 * Exponents of 2 within which the sums are used: well inside a double's range (±1022), so neither a fresh
 * report's term overflows nor an old one's vanishes while it still counts. Outside, the formula is used.
 */
export const MAX_SUM_EXPONENT = 600;

export function sumUnitsOf(params: ScoringParameters, epochMs: number): SumUnits {
  return { epochMs, halfLifeMs: params.halfLifeDays * DAY_MS, severityWeights: params.severityWeights, verifiedMultiplier: params.verifiedMultiplier };
}

/** Whether sums in `units` are sums of `params`' weights (else they cannot be used with them). */
export function unitsMatch(units: SumUnits, params: ScoringParameters): boolean {
  if (units.halfLifeMs !== params.halfLifeDays * DAY_MS || units.verifiedMultiplier !== params.verifiedMultiplier) return false;
  for (const s of [1, 2, 3, 4, 5] as const) if (units.severityWeights[s] !== params.severityWeights[s]) return false;
  return true;
}

/** Whether the sums can serve at `nowMs`: the epoch near enough, and retention short enough in half-lives. */
export function sumsUsableAt(units: SumUnits, nowMs: number, params: ScoringParameters): boolean {
  const fromEpoch = Math.abs(nowMs - units.epochMs) / units.halfLifeMs;
  return fromEpoch + (params.retentionDays * DAY_MS) / units.halfLifeMs <= MAX_SUM_EXPONENT;
}

/** One report's term in the sums (what the triggers add), for taking a report out in code. */
export function reportTerm(units: SumUnits, severity: Severity, verified: boolean, createdAtMs: number): number {
  const w = units.severityWeights[severity] * (verified ? units.verifiedMultiplier : 1);
  return w * Math.pow(2, (createdAtMs - units.epochMs) / units.halfLifeMs);
}

/** The factor that turns a sum into Σw at `nowMs`. */
export function decayFactor(units: SumUnits, nowMs: number): number {
  return Math.pow(2, (units.epochMs - nowMs) / units.halfLifeMs);
}

/** Σ over reporters of min(their Σw at `nowMs`, cap), in the order given (reporter id order). */
export function cappedSumOfReporters(sums: readonly ReporterSum[], units: SumUnits, nowMs: number, cap: number): number {
  const factor = decayFactor(units, nowMs);
  let total = 0;
  for (const s of sums) if (s.reports > 0) total += Math.min(s.weight * factor, cap);
  return total;
}

/** What the running sums of an address say at a time, with what the reports table says of its dates. */
export interface SummedAddress {
  readonly reporters: readonly ReporterSum[];
  /** Categories of the counting reports, as a mask. */
  readonly categoriesMask: number;
  /** The oldest counting report's time, and the newest's with its category: null when none counts. */
  readonly firstSeenMs: number | null;
  readonly lastSeenMs: number | null;
  readonly lastCategory: AddressScore["lastCategory"];
  /** The feeds' listings around the address (reports with `listed`): they count, undecayed, as their own reporters. */
  readonly listings: readonly ScoredReport[];
}

/** The address's score at `nowMs`, as scoreReports would give it from the same reports (within rounding of Σw). */
export function scoreOfSums(address: SummedAddress, units: SumUnits, nowMs: number, params: ScoringParameters): AddressScore {
  const listed = address.listings.length > 0 ? scoreReports(address.listings, nowMs, params) : null;
  let totalReports = listed?.totalReports ?? 0;
  let verifiedReports = listed?.verifiedReports ?? 0;
  for (const s of address.reporters) {
    totalReports += s.reports;
    verifiedReports += s.verified;
  }
  const sumWeight = cappedSumOfReporters(address.reporters, units, nowMs, params.perReporterCap) + (listed?.sumWeight ?? 0);
  const reputationScore = scoreFromWeight(sumWeight, params);
  return {
    reputationScore,
    riskLevel: riskLevelOf(reputationScore, params.riskThresholds),
    totalReports,
    verifiedReports,
    categoriesMask: address.categoriesMask | (listed?.categoriesMask ?? 0),
    firstSeenMs: address.firstSeenMs,
    lastSeenMs: address.lastSeenMs,
    lastCategory: address.lastCategory,
    sumWeight,
  };
}

/** nextRescoreDueMs for the same address from its sums: the first score change, or the oldest report's retention. */
export function nextRescoreDueOfSums(address: SummedAddress, units: SumUnits, nowMs: number, params: ScoringParameters): number | null {
  if (address.firstSeenMs === null) return null;
  const dropMs = Math.floor(address.firstSeenMs + params.retentionDays * DAY_MS) + 1;
  if (!Number.isSafeInteger(dropMs)) return null;
  const listedSum = address.listings.length > 0 ? scoreReports(address.listings, nowMs, params).sumWeight : 0;
  return firstChangeMs(nowMs, dropMs, (t) => cappedSumOfReporters(address.reporters, units, t, params.perReporterCap) + listedSum, params);
}
