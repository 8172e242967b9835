// The time a report carries from its client (AbuseIPDB's `timestamp` and a bulk row's `ReportDate`, contract 13
// and 18): kept when it is in the past and within retention; a few minutes ahead (a client's clock running fast)
// is taken as now; further ahead, or older than retention, is refused.

/** How far ahead of our clock a client's report time may be (then it is taken as now). */
export const REPORT_TIME_AHEAD_MS = 5 * 60_000;

/** Why a report time is refused: it lies too far ahead, or before retention. */
export type ReportTimeProblem = "future" | "expired";

/**
 * The report's time for a client's time `atMs` at `nowMs`, or the problem: more than REPORT_TIME_AHEAD_MS ahead
 * is "future", older than `retentionMs` is "expired"; up to REPORT_TIME_AHEAD_MS ahead is now.
 */
export function reportTimeOf(atMs: number, nowMs: number, retentionMs: number): number | ReportTimeProblem {
  if (atMs > nowMs + REPORT_TIME_AHEAD_MS) return "future";
  if (atMs < nowMs - retentionMs) return "expired";
  return Math.min(Math.trunc(atMs), nowMs);
}

/** The sentence after "The timestamp " (or another parameter's name) for a refused time. */
export function reportTimeMessage(problem: ReportTimeProblem, retentionDays: number): string {
  return problem === "future"
    ? "must not be more than 5 minutes in the future."
    : `must be within the last ${retentionDays} days (the reports' retention).`;
}
