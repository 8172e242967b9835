// Community verification (contract 5.5): a group's reports (one address, one category) become verified when at least
// 3 distinct reporters reported it within 7 days. "Within 7 days" is between the reports, not back from the time
// the check runs: reports at T, T+3 d and T+7 d - 30 s qualify even when the check comes a minute after the third.

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
  }
  return out;
}

/**
 * The reports of a group (in order of creation) that decide verifiablePending for a minimum of ≥ 2 reporters: of
 * each run of consecutive reports by one reporter its first and last, the first report dated at or after `since`,
 * and the pending reports within `windowMs` of another reporter's (the report before the run or the one after it).
 * verifiablePending gives the same set over these as over all:
 * - a span holding ≥ 2 reporters holds the first or the last report of each run it touches;
 * - a pending report farther than `windowMs` from every other reporter's is in no span of ≥ 2 reporters;
 * - a span starting at a dropped report is outdone by the one starting at the next kept report of its run (the
 *   same reporter, a later end, and between them no report it could verify).
 * What store/report-states.ts's groupReports keeps in SQL, so a flooded group's rows stay in SQLite.
 */
export function reportsDecidingVerification<R extends GroupReport>(reports: readonly R[], since: number, windowMs: number): R[] {
  const out: R[] = [];
  for (let first = 0; first < reports.length; ) {
    let last = first;
    while (last + 1 < reports.length && reports[last + 1].reporterId === reports[first].reporterId) last++;
    const before = first > 0 ? reports[first - 1].createdAt : undefined;
    const after = last + 1 < reports.length ? reports[last + 1].createdAt : undefined;
    for (let i = first; i <= last; i++) {
      const r = reports[i];
      const firstSince = r.createdAt >= since && (i === 0 || reports[i - 1].createdAt < since);
      const nearAnother = (before !== undefined && r.createdAt - before <= windowMs) || (after !== undefined && after - r.createdAt <= windowMs);
      if (i === first || i === last || firstSince || (r.status === "pending" && nearAnother)) out.push(r);
    }
    first = last + 1;
  }
  return out;
}
