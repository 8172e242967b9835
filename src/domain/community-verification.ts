// Community verification (contract 5.5): a group's reports (one address, one category) become verified when at least
// 3 distinct reporters reported it within 7 days. "Within 7 days" is between the reports, not back from the time
// the check runs: reports at T, T+3 d and T+7 d - 30 s qualify even when the check comes a minute after the third.

import { allAtOnce } from "./steps";

export interface GroupReport {
  id: number;
  reporterId: number;
  status: string;
  createdAt: number;
}

/**
 * The pending reports of a group to verify: those inside some span of `windowMs` that holds at least
 * `minReporters` distinct reporters among the group's counting reports (pending or verified) and reaches `since`
 * or later (a span wholly before it was the business of earlier checks; old history is not verified after the
 * fact). `reports` in order of creation.
 */
export function verifiablePending(reports: readonly GroupReport[], since: number, windowMs: number, minReporters: number): Set<number> {
  return allAtOnce(verifiablePendingInSteps(reports, since, windowMs, minReporters));
}

/** Reports looked at per step of verifiablePendingInSteps: ~4 ms at 16,384 (a flooded group has 121,000). */
const STEP_REPORTS = 16_384;

/** verifiablePending yielding every STEP_REPORTS reports, so a caller can serve requests between steps. */
export function* verifiablePendingInSteps(reports: readonly GroupReport[], since: number, windowMs: number, minReporters: number): Generator<void, Set<number>> {
  const out = new Set<number>();
  let end = 0;
  // Reports before this index are already in `out` if pending. Spans only move forward, so a qualifying span
  // adds only what lies past the last one: each report is looked at once, not once per span that holds it (a
  // group flooded with N reports in 7 days cost ~N²/2 steps, 4 s at 40,000).
  let added = 0;
  const count = new Map<number, number>();
  for (let start = 0; start < reports.length; start++) {
    const limit = reports[start].createdAt + windowMs;
    while (end < reports.length && reports[end].createdAt <= limit) {
      count.set(reports[end].reporterId, (count.get(reports[end].reporterId) ?? 0) + 1);
      end++;
    }
    // The span [start, end): the reports within windowMs of the start one.
    if (count.size >= minReporters && reports[end - 1].createdAt >= since) {
      for (let i = Math.max(start, added); i < end; i++) if (reports[i].status === "pending") out.add(reports[i].id);
      added = end;
    }
    const first = reports[start].reporterId;
    const left = (count.get(first) ?? 0) - 1;
    if (left === 0) count.delete(first);
    else count.set(first, left);
    if ((start + 1) % STEP_REPORTS === 0) yield;
  }
  return out;
}
