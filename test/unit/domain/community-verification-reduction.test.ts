// reportsDecidingVerification: verifiablePending over the reports it keeps equals verifiablePending over all of
// a group's reports, on random histories of runs by a few reporters (pending and verified mixed), times bunched
// around `since` and the 7-day window, and minimums of 2 to 4 reporters.

import { expect, test } from "bun:test";
import fc from "fast-check";
import { type GroupReport, reportsDecidingVerification, verifiablePending } from "../../../src/domain/community-verification";

const WINDOW = 7;

/** A run: one reporter's consecutive reports, each `gaps[i]` after the one before it (0: the same instant). */
const run = fc.record({
  reporterId: fc.integer({ min: 1, max: 4 }),
  reports: fc.array(fc.record({ gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 }), fc.constant(WINDOW), fc.constant(WINDOW + 1)), pending: fc.boolean() }), { minLength: 1, maxLength: 8 }),
});

/** The group's reports in order of creation (ids rise with it, as (created_at, id) orders them). */
function history(runs: readonly { reporterId: number; reports: readonly { gap: number; pending: boolean }[] }[], start: number): GroupReport[] {
  const out: GroupReport[] = [];
  let at = start;
  for (const r of runs) {
    for (const { gap, pending } of r.reports) {
      at += gap;
      out.push({ id: out.length + 1, reporterId: r.reporterId, status: pending ? "pending" : "verified", createdAt: at });
    }
  }
  return out;
}

const sorted = (ids: Set<number>) => [...ids].sort((a, b) => a - b);

test("verifiablePending over the kept reports equals it over all of them", () => {
  fc.assert(
    fc.property(fc.array(run, { minLength: 0, maxLength: 12 }), fc.integer({ min: -5, max: 40 }), fc.integer({ min: 2, max: 4 }), (runs, since, minReporters) => {
      const all = history(runs, 0);
      const kept = reportsDecidingVerification(all, since, WINDOW);
      expect(sorted(verifiablePending(kept, since, WINDOW, minReporters))).toEqual(sorted(verifiablePending(all, since, WINDOW, minReporters)));
    }),
    { numRuns: 20_000 },
  );
});

test("a flooded group keeps its run's ends, the first report since and the pending reports near another reporter's", () => {
  // One reporter's 1,000 reports, one a time unit, verified from 600 on; then two more reporters' pending ones.
  const all: GroupReport[] = Array.from({ length: 1_000 }, (_, i) => ({ id: i + 1, reporterId: 1, status: i >= 600 ? "verified" : "pending", createdAt: i }));
  all.push({ id: 1_001, reporterId: 2, status: "pending", createdAt: 1_000 }, { id: 1_002, reporterId: 3, status: "pending", createdAt: 1_001 });
  // Pending reports 401-600 lie at 400-599, at most 600 from reporter 2's; those before lie farther.
  const ids = reportsDecidingVerification(all, 500, 600).map((r) => r.id);
  expect(ids).toEqual([1, ...Array.from({ length: 200 }, (_, i) => 401 + i), 1_000, 1_001, 1_002]);
});
