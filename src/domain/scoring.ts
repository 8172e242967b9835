// Reputation scoring, exactly as contract 5.7: which reports count, each one's decayed weight, the per-reporter cap,
// and the score and risk level of an address at a given time. Pure: the time is an argument, never read.
//
// Determinism: floating-point addition is not associative, so the same reports summed in another order could land a
// score on the other side of a .5 and round differently. Reports are therefore always summed in one fixed order,
// whatever order the caller gives them in: sorted by (reporterId, createdAtMs, id, severity, status, category);
// each reporter's weights are summed in that order and capped, and the capped sums are added in reporterId order.
// Two reports equal on every key have equal weights, so their relative order cannot change the result. The
// server, the CLI and a snapshot therefore give the same score for the same reports and time.

import { type Category, categoryBit } from "./categories";
import { type FieldError, validationFailed } from "./errors";
import { DEFAULT_RISK_THRESHOLDS, RISK_LEVELS, type RiskLevel, type RiskThresholds, riskLevelOf, riskThresholdProblems, scoreRangeOf } from "./risk";

export const DAY_MS = 86_400_000;

export const SEVERITIES = [1, 2, 3, 4, 5] as const;
export type Severity = (typeof SEVERITIES)[number];

export function isSeverity(value: unknown): value is Severity {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 5;
}

/** Report states (contract 5.5). Only pending and verified reports count towards a score. */
export const REPORT_STATUSES = ["pending", "verified", "rejected", "expired"] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

export interface ScoringParameters {
  /** Days after which a report's weight has halved. */
  readonly halfLifeDays: number;
  /** Weight of a fresh, unverified report of each severity. */
  readonly severityWeights: Readonly<Record<Severity, number>>;
  /** Factor on a verified report's weight. */
  readonly verifiedMultiplier: number;
  /** Most that one reporter's weights can add up to for one address. */
  readonly perReporterCap: number;
  /** Σw at which the score has fallen to 100/e: score = round(100 × exp(−Σw / scale)). */
  readonly scale: number;
  readonly riskThresholds: RiskThresholds;
  /** A report older than this many days stops counting (and the expire job marks it expired). */
  readonly retentionDays: number;
}

export const DEFAULT_SCORING_PARAMETERS: ScoringParameters = Object.freeze({
  halfLifeDays: 30,
  severityWeights: Object.freeze({ 1: 0.2, 2: 0.4, 3: 0.6, 4: 0.8, 5: 1.0 }),
  verifiedMultiplier: 2,
  perReporterCap: 1.5,
  scale: 1.5,
  riskThresholds: DEFAULT_RISK_THRESHOLDS,
  retentionDays: 365,
});

/** Settings an operator may change; anything left out keeps its default. */
export interface ScoringParameterOverrides {
  halfLifeDays?: number;
  severityWeights?: Partial<Record<Severity, number>>;
  verifiedMultiplier?: number;
  perReporterCap?: number;
  scale?: number;
  riskThresholds?: Partial<RiskThresholds>;
  retentionDays?: number;
}

const positiveFinite = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && v > 0;

/**
 * The longest retention and half-life taken, in days (a century): far beyond any use, and small enough that the
 * times computed from them stay finite (1e308 days made the rescore time's search never end).
 */
export const MAX_SCORING_DAYS = 36_500;

/** What is wrong with a set of parameters, one entry per bad field; empty when they are usable. */
export function scoringParameterProblems(p: ScoringParameters): FieldError[] {
  const problems: FieldError[] = [];
  if (!positiveFinite(p.halfLifeDays) || p.halfLifeDays > MAX_SCORING_DAYS) {
    problems.push({ field: "halfLifeDays", message: `must be a number greater than 0 and at most ${MAX_SCORING_DAYS}` });
  }
  for (const s of SEVERITIES) {
    const w = p.severityWeights?.[s];
    if (typeof w !== "number" || !Number.isFinite(w) || w < 0) {
      problems.push({ field: `severityWeights.${s}`, message: "must be a number of at least 0" });
    }
  }
  if (!positiveFinite(p.verifiedMultiplier)) problems.push({ field: "verifiedMultiplier", message: "must be a number greater than 0" });
  if (!positiveFinite(p.perReporterCap)) problems.push({ field: "perReporterCap", message: "must be a number greater than 0" });
  if (!positiveFinite(p.scale)) problems.push({ field: "scale", message: "must be a number greater than 0" });
  if (typeof p.retentionDays !== "number" || !Number.isInteger(p.retentionDays) || p.retentionDays < 1 || p.retentionDays > MAX_SCORING_DAYS) {
    problems.push({ field: "retentionDays", message: `must be an integer from 1 to ${MAX_SCORING_DAYS}` });
  }
  problems.push(...riskThresholdProblems(p.riskThresholds ?? ({} as RiskThresholds)));
  return problems;
}

/** The defaults with the overrides applied, validated; throws AppError validation_failed listing every bad field. */
export function resolveScoringParameters(overrides: ScoringParameterOverrides = {}): ScoringParameters {
  const d = DEFAULT_SCORING_PARAMETERS;
  const params: ScoringParameters = {
    halfLifeDays: overrides.halfLifeDays ?? d.halfLifeDays,
    severityWeights: Object.freeze({ ...d.severityWeights, ...overrides.severityWeights }),
    verifiedMultiplier: overrides.verifiedMultiplier ?? d.verifiedMultiplier,
    perReporterCap: overrides.perReporterCap ?? d.perReporterCap,
    scale: overrides.scale ?? d.scale,
    riskThresholds: Object.freeze({ ...d.riskThresholds, ...overrides.riskThresholds }),
    retentionDays: overrides.retentionDays ?? d.retentionDays,
  };
  const problems = scoringParameterProblems(params);
  if (problems.length > 0) throw validationFailed(problems, "Invalid scoring parameters");
  return Object.freeze(params);
}

/** What scoring needs to know about one report. */
export interface ScoredReport {
  /** A user id, or `feed:NAME` for a feed's entries. */
  readonly reporterId: string | number;
  readonly severity: Severity;
  readonly createdAtMs: number;
  readonly status: ReportStatus;
  readonly category: Category;
  /** The report's id, when known: only a tie-breaker for the summing order and for "newest report". */
  readonly id?: number | string;
  /**
   * A feed's listing of a network around the address (contract 12), not a report: it counts at full weight
   * while listed (no decay, no retention: the feed says so now) and dates nothing (first/last seen).
   */
  readonly listed?: boolean;
}

/** Age in days at `nowMs`; a report dated in the future has age 0. */
export function ageDays(createdAtMs: number, nowMs: number): number {
  return nowMs > createdAtMs ? (nowMs - createdAtMs) / DAY_MS : 0;
}

/** Whether a report is older than the retention period: it stops counting at once, expired or not yet. */
export function isPastRetention(createdAtMs: number, nowMs: number, params: ScoringParameters = DEFAULT_SCORING_PARAMETERS): boolean {
  return nowMs - createdAtMs > params.retentionDays * DAY_MS;
}

/** Reports created before this instant are past retention at `nowMs` (for the expire job's query). */
export function retentionCutoffMs(nowMs: number, params: ScoringParameters = DEFAULT_SCORING_PARAMETERS): number {
  return nowMs - params.retentionDays * DAY_MS;
}

/** Whether a report counts at `nowMs`: pending or verified, and not past retention. */
export function reportCounts(report: Pick<ScoredReport, "status" | "createdAtMs" | "listed">, nowMs: number, params: ScoringParameters = DEFAULT_SCORING_PARAMETERS): boolean {
  if (report.listed) return true;
  return (report.status === "pending" || report.status === "verified") && !isPastRetention(report.createdAtMs, nowMs, params);
}

/** severityWeight × 0.5^(ageDays / halfLife) × (verified ? multiplier : 1), before the per-reporter cap. */
function decayedWeight(report: Pick<ScoredReport, "severity" | "createdAtMs" | "status" | "listed">, nowMs: number, params: ScoringParameters): number {
  const decay = report.listed ? 1 : Math.pow(0.5, ageDays(report.createdAtMs, nowMs) / params.halfLifeDays);
  const w = params.severityWeights[report.severity] * decay;
  return report.status === "verified" ? w * params.verifiedMultiplier : w;
}

/** One report's weight at `nowMs` (before the per-reporter cap); 0 for a report that does not count. */
export function reportWeight(report: Pick<ScoredReport, "severity" | "createdAtMs" | "status">, nowMs: number, params: ScoringParameters = DEFAULT_SCORING_PARAMETERS): number {
  return reportCounts(report, nowMs, params) ? decayedWeight(report, nowMs, params) : 0;
}

/** round(100 × exp(−Σw / scale)): 100 for no weight, falling towards 0. */
export function scoreFromWeight(sumWeight: number, params: ScoringParameters = DEFAULT_SCORING_PARAMETERS): number {
  return Math.round(100 * Math.exp(-sumWeight / params.scale));
}

/** `abuse_confidence` of the IP detail record: 100 − reputationScore. */
export function abuseConfidence(reputationScore: number): number {
  return 100 - reputationScore;
}

/** An address's standing at one instant, from the reports that count then. */
export interface AddressScore {
  /** 0 most abusive .. 100 clean. */
  readonly reputationScore: number;
  readonly riskLevel: RiskLevel;
  /** Reports that count. */
  readonly totalReports: number;
  /** Of those, the verified ones. */
  readonly verifiedReports: number;
  /** Categories of the reports that count (bit i = CATEGORIES[i]). */
  readonly categoriesMask: number;
  /** Oldest and newest report that counts; null when none does. */
  readonly firstSeenMs: number | null;
  readonly lastSeenMs: number | null;
  /** Category of the newest report that counts. */
  readonly lastCategory: Category | null;
  /** Σ of the capped per-reporter weights. */
  readonly sumWeight: number;
}

function compareIds(a: number | string | undefined, b: number | string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return -1;
  if (b === undefined) return 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1; // numbers sort before strings
  if (typeof b === "number") return 1;
  return a < b ? -1 : 1;
}

/** The fixed summing order (see the module comment). Independent of time, so one sort serves every instant. */
function compareForSum(a: ScoredReport, b: ScoredReport): number {
  return (
    compareIds(a.reporterId, b.reporterId) ||
    a.createdAtMs - b.createdAtMs ||
    compareIds(a.id, b.id) ||
    a.severity - b.severity ||
    (a.status === b.status ? 0 : a.status < b.status ? -1 : 1) ||
    categoryBit(a.category) - categoryBit(b.category)
  );
}

/** Σ over reporters (in order) of min(Σ of the reporter's weights, cap); `sorted` all count at `nowMs`. */
function cappedSum(sorted: readonly ScoredReport[], nowMs: number, params: ScoringParameters): number {
  let total = 0;
  let reporterSum = 0;
  for (let i = 0; i < sorted.length; i++) {
    const r = sorted[i];
    if (i > 0 && sorted[i - 1].reporterId !== r.reporterId) {
      total += Math.min(reporterSum, params.perReporterCap);
      reporterSum = 0;
    }
    reporterSum += decayedWeight(r, nowMs, params);
  }
  if (sorted.length > 0) total += Math.min(reporterSum, params.perReporterCap);
  return total;
}

function countingSorted(reports: Iterable<ScoredReport>, nowMs: number, params: ScoringParameters): ScoredReport[] {
  const counting: ScoredReport[] = [];
  for (const r of reports) if (reportCounts(r, nowMs, params)) counting.push(r);
  return counting.sort(compareForSum);
}

/** The score and summary of an address at `nowMs` from all its reports (any order, any states). */
export function scoreReports(reports: Iterable<ScoredReport>, nowMs: number, params: ScoringParameters = DEFAULT_SCORING_PARAMETERS): AddressScore {
  const sorted = countingSorted(reports, nowMs, params);
  let verifiedReports = 0;
  let categoriesMask = 0;
  let first: ScoredReport | null = null;
  let last: ScoredReport | null = null;
  for (const r of sorted) {
    if (r.status === "verified") verifiedReports++;
    categoriesMask |= 1 << categoryBit(r.category);
    if (r.listed) continue;
    if (first === null || r.createdAtMs < first.createdAtMs) first = r;
    // Newest by time, then by id; on a full tie the later one in the summing order, so the choice is fixed.
    if (last === null || r.createdAtMs > last.createdAtMs || (r.createdAtMs === last.createdAtMs && compareIds(r.id, last.id) >= 0)) last = r;
  }
  const sumWeight = cappedSum(sorted, nowMs, params);
  const reputationScore = scoreFromWeight(sumWeight, params);
  return {
    reputationScore,
    riskLevel: riskLevelOf(reputationScore, params.riskThresholds),
    totalReports: sorted.length,
    verifiedReports,
    categoriesMask,
    firstSeenMs: first === null ? null : first.createdAtMs,
    lastSeenMs: last === null ? null : last.createdAtMs,
    lastCategory: last === null ? null : last.category,
    sumWeight,
  };
}

/**
 * When the rescore job next needs to look at this address, assuming no report is added or changes state: the
 * first whole millisecond after `nowMs` at which `scoreReports` would give a different reputationScore
 * (`granularity: "score"`, the default) or riskLevel (`"riskLevel"`), or at which a report passes retention
 * (counts and categories change then), whichever is first. Null when no report counts: nothing will change.
 *
 * Decay only ever raises the score, so the first change is found by bisection over time with the very arithmetic
 * of `scoreReports`: at the returned instant the result differs, one millisecond earlier it does not.
 */
export function nextRescoreDueMs(
  reports: Iterable<ScoredReport>,
  nowMs: number,
  params: ScoringParameters = DEFAULT_SCORING_PARAMETERS,
  granularity: "score" | "riskLevel" = "score",
): number | null {
  const now = Math.floor(nowMs);
  const sorted = countingSorted(reports, now, params);
  if (sorted.length === 0) return null;
  let oldest = Number.POSITIVE_INFINITY;
  for (const r of sorted) if (!r.listed && r.createdAtMs < oldest) oldest = r.createdAtMs;
  // Only listings: nothing decays or passes retention, so nothing changes until the listings do.
  if (oldest === Number.POSITIVE_INFINITY) return null;
  // First whole millisecond at which the oldest report is past retention.
  const dropMs = Math.floor(oldest + params.retentionDays * DAY_MS) + 1;
  // The search below halves a span of whole milliseconds: past 2^53 it would never end (nothing valid gets there).
  if (!Number.isSafeInteger(dropMs)) return null;
  return firstChangeMs(now, dropMs, (t) => cappedSum(sorted, t, params), params, granularity);
}

/**
 * The first whole millisecond after `nowMs` (before `dropMs`, else `dropMs`) at which the score (or risk level)
 * of the Σw that `sumAt` gives differs from the one at `nowMs`, by bisection: Σw only falls as time passes.
 */
export function firstChangeMs(
  nowMs: number,
  dropMs: number,
  sumAt: (t: number) => number,
  params: ScoringParameters,
  granularity: "score" | "riskLevel" = "score",
): number {
  const now = Math.floor(nowMs);
  const valueAt = (t: number): number | RiskLevel => {
    const score = scoreFromWeight(sumAt(t), params);
    return granularity === "score" ? score : riskLevelOf(score, params.riskThresholds);
  };
  const current = valueAt(now);
  let lo = now; // valueAt(lo) === current
  let hi = dropMs - 1;
  if (hi <= lo || valueAt(hi) === current) return dropMs;
  // Invariant: valueAt(lo) === current, valueAt(hi) !== current.
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (valueAt(mid) === current) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The parameters in force as `GET /v1/scoring` shows them. */
export function scoringParametersView(params: ScoringParameters = DEFAULT_SCORING_PARAMETERS) {
  return {
    formula: "reputationScore = round(100 × exp(−Σw / scale)); w = severityWeight[severity] × 0.5^(ageDays / halfLifeDays) × (verified ? verifiedMultiplier : 1); each reporter's Σw per address capped at perReporterCap",
    halfLifeDays: params.halfLifeDays,
    severityWeights: Object.fromEntries(SEVERITIES.map((s) => [String(s), params.severityWeights[s]])) as Record<`${Severity}`, number>,
    verifiedMultiplier: params.verifiedMultiplier,
    perReporterCap: params.perReporterCap,
    scale: params.scale,
    retentionDays: params.retentionDays,
    riskThresholds: { low: params.riskThresholds.low, medium: params.riskThresholds.medium, high: params.riskThresholds.high },
    riskLevels: RISK_LEVELS.map((level) => {
      const { min, max } = scoreRangeOf(level, params.riskThresholds);
      return { level, minScore: min, maxScore: max };
    }),
  };
}
