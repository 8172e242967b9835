// verifiablePending (contract 5.5) against a brute force over every span of 7 days that starts at a report: random
// groups of reports by a few reporters, some verified, spread over three weeks.

import { expect, test } from "bun:test";
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

test("agrees with a brute force on 5,000 random groups", () => {
  const random = rng(5);
  for (let g = 0; g < 5_000; g++) {
    const n = 1 + (random() % 9);
    const reports: GroupReport[] = Array.from({ length: n }, (_, i) => ({
      id: i + 1,
      reporterId: random() % 5,
      status: random() % 4 === 0 ? "verified" : "pending",
      createdAt: random() % 21,
    })).sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
    const since = 7 + (random() % 14);
    expect([...verifiablePending(reports, since, WINDOW, 3)].sort()).toEqual([...bruteForce(reports, since)].sort());
  }
});
