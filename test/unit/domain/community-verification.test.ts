// verifiablePending (contract 5.5) against a brute force over every span of 7 days that starts at a report: random
// groups of reports by a few reporters, some verified, spread over three weeks. Then against the first version of
// the sliding window (quadratic in a flooded group, kept here as the reference), edge cases, and its cost.

import { describe, expect, test } from "bun:test";
import { type GroupReport, verifiablePending } from "../../../src/domain/community-verification";
import { rng } from "../../support/random";

const WINDOW = 7;

function bruteForce(reports: readonly GroupReport[], since: number): Set<number> {
  const out = new Set<number>();
  for (const first of reports) {
    const span = reports.filter((r) => r.createdAt >= first.createdAt && r.createdAt <= first.createdAt + WINDOW);
    const reporters = new Set(span.map((r) => r.reporterId));
    if (reporters.size >= 3 && span.some((r) => r.createdAt >= since)) for (const r of span) if (r.status === "pending") out.add(r.id);
  }
  return out;
}

/** The first version of verifiablePending: it walked the whole span of every qualifying start (~N²/2 steps). */
function quadraticReference(reports: readonly GroupReport[], since: number, windowMs: number, minReporters: number): Set<number> {
  const out = new Set<number>();
  let end = 0;
  const count = new Map<number, number>();
  for (let start = 0; start < reports.length; start++) {
    const limit = reports[start].createdAt + windowMs;
    while (end < reports.length && reports[end].createdAt <= limit) {
      count.set(reports[end].reporterId, (count.get(reports[end].reporterId) ?? 0) + 1);
      end++;
    }
    if (count.size >= minReporters && reports[end - 1].createdAt >= since) {
      for (let i = start; i < end; i++) if (reports[i].status === "pending") out.add(reports[i].id);
    }
    const first = reports[start].reporterId;
    const left = (count.get(first) ?? 0) - 1;
    if (left === 0) count.delete(first);
    else count.set(first, left);
  }
  return out;
}

/** A group of `n` reports at whole times in [0, span), in order of creation (ties by id, as the query orders them). */
function randomGroup(random: () => number, n: number, reporters: number, span: number): GroupReport[] {
  return Array.from({ length: n }, (_, i) => ({
    id: i + 1,
    reporterId: random() % reporters,
    status: random() % 4 === 0 ? "verified" : "pending",
    createdAt: random() % span,
  })).sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
}

const sorted = (ids: Set<number>) => [...ids].sort((a, b) => a - b);

test("agrees with a brute force on 5,000 random groups", () => {
  const random = rng(5);
  for (let g = 0; g < 5_000; g++) {
    const reports = randomGroup(random, 1 + (random() % 9), 5, 21);
    const since = 7 + (random() % 14);
    expect(sorted(verifiablePending(reports, since, WINDOW, 3))).toEqual(sorted(bruteForce(reports, since)));
  }
});

test("gives exactly the first version's results on 20,000 random groups, windows and minimums", () => {
  // Whole times in a short range put many reports on the same instant and many pairs exactly a window apart.
  const random = rng(11);
  for (let g = 0; g < 20_000; g++) {
    const span = 1 + (random() % 40);
    const reports = randomGroup(random, random() % 60, 1 + (random() % 8), span);
    const windowMs = random() % 12;
    const minReporters = 1 + (random() % 5);
    const since = (random() % (span + 4)) - 2;
    expect(sorted(verifiablePending(reports, since, windowMs, minReporters))).toEqual(sorted(quadraticReference(reports, since, windowMs, minReporters)));
  }
});

describe("edge cases", () => {
  const report = (id: number, reporterId: number, createdAt: number, status = "pending"): GroupReport => ({ id, reporterId, status, createdAt });

  test("the window holds reports exactly windowMs apart, and not one more", () => {
    expect(sorted(verifiablePending([report(1, 1, 0), report(2, 2, 3), report(3, 3, 7)], 7, WINDOW, 3))).toEqual([1, 2, 3]);
    expect(sorted(verifiablePending([report(1, 1, 0), report(2, 2, 3), report(3, 3, 8)], 8, WINDOW, 3))).toEqual([]);
  });

  test("a span must reach `since`: one ending just before it verifies nothing", () => {
    const reports = [report(1, 1, 0), report(2, 2, 1), report(3, 3, 2)];
    expect(sorted(verifiablePending(reports, 2, WINDOW, 3))).toEqual([1, 2, 3]);
    expect(sorted(verifiablePending(reports, 3, WINDOW, 3))).toEqual([]);
  });

  test("one reporter fewer than the minimum verifies nothing; the minimum verifies the whole span", () => {
    const two = [report(1, 1, 0), report(2, 2, 1), report(3, 1, 2), report(4, 2, 3)];
    expect(sorted(verifiablePending(two, 0, WINDOW, 3))).toEqual([]);
    expect(sorted(verifiablePending([...two, report(5, 3, 4)], 0, WINDOW, 3))).toEqual([1, 2, 3, 4, 5]);
  });

  test("one reporter's repeated reports count once", () => {
    const reports = [report(1, 1, 0), report(2, 1, 1), report(3, 1, 2), report(4, 2, 3)];
    expect(sorted(verifiablePending(reports, 0, WINDOW, 3))).toEqual([]);
  });

  test("verified reports count toward the reporters but only pending ones are returned", () => {
    const reports = [report(1, 1, 0, "verified"), report(2, 2, 1, "verified"), report(3, 3, 2)];
    expect(sorted(verifiablePending(reports, 0, WINDOW, 3))).toEqual([3]);
  });

  test("overlapping qualifying spans verify their union, and a report outside every one stays pending", () => {
    // The spans from 0 and 1 (reports 1-4) and from 10 (reports 5-7) qualify; the one from 7 between them
    // (reports 4-6) has two reporters, and report 8 is in none.
    const reports = [report(1, 1, 0), report(2, 2, 1), report(3, 3, 2), report(4, 1, 7), report(5, 1, 10), report(6, 2, 11), report(7, 3, 17), report(8, 1, 30)];
    expect(sorted(verifiablePending(reports, 0, WINDOW, 3))).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  test("an empty group verifies nothing", () => {
    expect(verifiablePending([], 0, WINDOW, 3).size).toBe(0);
  });
});

test("each report's status is looked at once at most, however many spans hold it (a flooded group)", () => {
  // 2,000 reports within one window from 200 reporters, the newest pending: every start qualifies, so walking
  // each span again looked at ~2,000,000 statuses.
  let looks = 0;
  const reports: GroupReport[] = Array.from({ length: 2_000 }, (_, i) => {
    const status = i === 1_999 ? "pending" : "verified";
    return {
      id: i + 1,
      reporterId: i % 200,
      createdAt: i,
      get status() {
        looks++;
        return status;
      },
    };
  });
  expect(sorted(verifiablePending(reports, 1_999, 5_000, 3))).toEqual([2_000]);
  expect(looks).toBeLessThanOrEqual(reports.length);
});
