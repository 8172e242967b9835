// Expected scores were computed independently of this code (Python, exact formula of contract 5.7):
// round(100·e^(−Σw/1.5)) with w = {0.2,0.4,0.6,0.8,1.0}[sev] · 0.5^(days/30) · (verified ? 2 : 1), per reporter ≤ 1.5.
import { describe, expect, test } from "bun:test";
import { maskOf } from "../../../src/domain/categories";
import { AppError } from "../../../src/domain/errors";
import {
  DAY_MS,
  DEFAULT_SCORING_PARAMETERS,
  type ReportStatus,
  type ScoredReport,
  type Severity,
  abuseConfidence,
  ageDays,
  isPastRetention,
  nextRescoreDueMs,
  reportCounts,
  reportWeight,
  resolveScoringParameters,
  retentionCutoffMs,
  scoreFromWeight,
  scoreReports,
  scoringParameterProblems,
  scoringParametersView,
} from "../../../src/domain/scoring";

const NOW = Date.parse("2026-11-21T08:00:00.000Z");

let nextId = 1;
function report(
  reporterId: string | number,
  severity: Severity,
  daysAgo: number,
  status: ReportStatus = "pending",
  category: ScoredReport["category"] = "SSH",
): ScoredReport {
  return { id: nextId++, reporterId, severity, createdAtMs: NOW - daysAgo * DAY_MS, status, category };
}

const scoreOf = (reports: ScoredReport[], now = NOW) => scoreReports(reports, now).reputationScore;

describe("one fresh report", () => {
  test.each([
    [1, 0.2, 88, "LOW"],
    [2, 0.4, 77, "MEDIUM"],
    [3, 0.6, 67, "MEDIUM"],
    [4, 0.8, 59, "MEDIUM"],
    [5, 1.0, 51, "MEDIUM"],
  ] as const)("severity %i weighs %d and scores %i (%s)", (severity, weight, score, level) => {
    const r = report("u1", severity, 0);
    expect(reportWeight(r, NOW)).toBeCloseTo(weight, 12);
    const s = scoreReports([r], NOW);
    expect(s.reputationScore).toBe(score);
    expect(s.riskLevel).toBe(level);
    expect(abuseConfidence(s.reputationScore)).toBe(100 - score);
    expect(s.totalReports).toBe(1);
    expect(s.verifiedReports).toBe(0);
  });

  test.each([
    [1, 0.4, 77],
    [2, 0.8, 59],
    [3, 1.2, 45],
    [4, 1.6, 37], // over the per-reporter cap: 1.5
    [5, 2.0, 37],
  ] as const)("verified severity %i weighs %d and scores %i", (severity, weight, score) => {
    const r = report("u1", severity, 0, "verified");
    expect(reportWeight(r, NOW)).toBeCloseTo(weight, 12);
    const s = scoreReports([r], NOW);
    expect(s.reputationScore).toBe(score);
    expect(s.verifiedReports).toBe(1);
  });
});

describe("decay with a 30-day half-life", () => {
  test.each([
    [5, 0, 1.0, 51],
    [5, 30, 0.5, 72],
    [5, 60, 0.25, 85],
    [3, 30, 0.3, 82],
    [4, 45, 0.8 * 0.5 ** 1.5, 83],
  ] as const)("severity %i at %i days weighs %d and scores %i", (severity, days, weight, score) => {
    const r = report("u1", severity, days);
    expect(reportWeight(r, NOW)).toBeCloseTo(weight, 12);
    expect(scoreOf([r])).toBe(score);
  });

  test("ages are (now − createdAt) / 86 400 000; a future date clamps to age 0", () => {
    expect(ageDays(NOW - 36 * 3_600_000, NOW)).toBe(1.5);
    expect(ageDays(NOW + DAY_MS, NOW)).toBe(0);
    expect(reportWeight(report("u1", 5, -1), NOW)).toBe(1);
    expect(scoreOf([report("u1", 5, -1)])).toBe(51);
  });

  test("the same report scores higher as time passes", () => {
    const r = report("u1", 5, 0);
    expect([0, 30, 60, 90].map((d) => scoreOf([r], NOW + d * DAY_MS))).toEqual([51, 72, 85, 92]);
  });
});

describe("the per-reporter cap", () => {
  test("ten fresh severity-5 reports from one reporter weigh 1.5, not 10: score 37", () => {
    const reports = Array.from({ length: 10 }, () => report("u1", 5, 0));
    const s = scoreReports(reports, NOW);
    expect(s.sumWeight).toBe(1.5);
    expect(s.reputationScore).toBe(37);
    expect(s.riskLevel).toBe("HIGH");
    expect(s.totalReports).toBe(10);
  });

  test("the same ten reports from ten reporters score 0", () => {
    const reports = Array.from({ length: 10 }, (_, i) => report(`u${i}`, 5, 0));
    const s = scoreReports(reports, NOW);
    expect(s.sumWeight).toBeCloseTo(10, 12);
    expect(s.reputationScore).toBe(0);
    expect(s.riskLevel).toBe("CRITICAL");
  });

  test.each([
    [1, 51],
    [2, 26],
    [3, 14],
  ])("%i reporters with one fresh severity-5 report each score %i", (n, score) => {
    expect(scoreOf(Array.from({ length: n }, (_, i) => report(i + 1, 5, 0)))).toBe(score);
  });

  test("the cap is per reporter: a capped reporter plus another's 0.1 scores 34", () => {
    const reports = [report("a", 5, 0), report("a", 5, 0), report("a", 1, 60), report("b", 1, 30)];
    const s = scoreReports(reports, NOW);
    expect(s.sumWeight).toBeCloseTo(1.6, 12);
    expect(s.reputationScore).toBe(34);
  });

  test("a mix under the cap: a = 4@10d + verified 2@3d, b = 1@30d → 37", () => {
    const s = scoreReports([report("a", 4, 10), report("a", 2, 3, "verified"), report("b", 1, 30)], NOW);
    expect(s.sumWeight).toBeCloseTo(1.3813868140167258 + 0.1, 12);
    expect(s.reputationScore).toBe(37);
    expect(s.verifiedReports).toBe(1);
    expect(s.totalReports).toBe(3);
  });
});

describe("reports that do not count", () => {
  test.each([
    ["rejected", false, 100],
    ["expired", false, 100],
    ["pending", true, 51],
    ["verified", true, 37],
  ] as const)("a fresh severity-5 %s report counts: %p (score %i)", (status, counts, score) => {
    const r = report("u1", 5, 0, status);
    expect(reportCounts(r, NOW)).toBe(counts);
    const s = scoreReports([r], NOW);
    expect(s.totalReports).toBe(counts ? 1 : 0);
    expect(s.reputationScore).toBe(score);
    if (!counts) expect(reportWeight(r, NOW)).toBe(0);
  });

  test("a report stops counting the millisecond it is older than 365 days, expired or not", () => {
    const r = { ...report("u1", 5, 0, "verified", "DDOS"), createdAtMs: NOW - 365 * DAY_MS };
    expect(isPastRetention(r.createdAtMs, NOW)).toBe(false);
    expect(scoreReports([r], NOW).totalReports).toBe(1);
    expect(isPastRetention(r.createdAtMs, NOW + 1)).toBe(true);
    const later = scoreReports([r], NOW + 1);
    expect(later.totalReports).toBe(0);
    expect(later.categoriesMask).toBe(0);
    expect(later.sumWeight).toBe(0);
    expect(retentionCutoffMs(NOW)).toBe(NOW - 365 * DAY_MS);
  });

  test("no reports: 100, LOW, nothing seen", () => {
    expect(scoreReports([], NOW)).toEqual({
      reputationScore: 100,
      riskLevel: "LOW",
      totalReports: 0,
      verifiedReports: 0,
      categoriesMask: 0,
      firstSeenMs: null,
      lastSeenMs: null,
      lastCategory: null,
      sumWeight: 0,
    });
  });

  test("only counting reports give counts, categories and dates", () => {
    const reports = [
      report("a", 3, 10, "pending", "SSH"),
      report("b", 4, 2, "verified", "BRUTE_FORCE"),
      report("c", 5, 1, "rejected", "SPAM"),
      report("d", 5, 400, "pending", "DDOS"),
      report("e", 5, 20, "expired", "PHISHING"),
    ];
    const s = scoreReports(reports, NOW);
    expect(s.totalReports).toBe(2);
    expect(s.verifiedReports).toBe(1);
    expect(s.categoriesMask).toBe(maskOf(["SSH", "BRUTE_FORCE"]));
    expect(s.firstSeenMs).toBe(NOW - 10 * DAY_MS);
    expect(s.lastSeenMs).toBe(NOW - 2 * DAY_MS);
    expect(s.lastCategory).toBe("BRUTE_FORCE");
  });
});

describe("risk thresholds from real report sets", () => {
  // Each set lands on the score named, chosen away from a .5 rounding edge.
  test.each([
    ["80: severity 3 at 25 days", [report("a", 3, 25)], 80, "LOW"],
    ["79: severity 5 at 45 days", [report("a", 5, 45)], 79, "MEDIUM"],
    ["50: verified severity 3 at 6 days", [report("a", 3, 6, "verified")], 50, "MEDIUM"],
    ["49: verified severity 3 at 5 days", [report("a", 3, 5, "verified")], 49, "HIGH"],
    ["20: a capped reporter + severity 5 at 4 days", [report("a", 5, 0, "verified"), report("b", 5, 4)], 20, "HIGH"],
    ["19: a capped reporter + fresh severity 5", [report("a", 5, 0, "verified"), report("b", 5, 0)], 19, "CRITICAL"],
  ])("%s", (_name, reports, score, level) => {
    const s = scoreReports(reports, NOW);
    expect(s.reputationScore).toBe(score);
    expect(s.riskLevel).toBe(level as never);
  });
});

describe("determinism", () => {
  const reports = [
    report("b", 3, 1.25),
    report("a", 5, 7.5, "verified", "DDOS"),
    report("c", 2, 0.1, "pending", "SPAM"),
    report("a", 1, 33.3),
    report("b", 4, 12, "verified", "BRUTE_FORCE"),
    report(7, 4, 2.2, "pending", "PORT_SCAN"),
    report("c", 2, 0.1, "pending", "PHISHING"),
  ];

  test("any order of the same reports gives the identical result, bit for bit", () => {
    const expected = scoreReports(reports, NOW);
    let seed = 12345;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 50; i++) {
      const shuffled = [...reports].sort(() => random() - 0.5);
      expect(scoreReports(shuffled, NOW)).toEqual(expected);
    }
    expect(scoreReports(new Set(reports), NOW)).toEqual(expected);
  });

  test("the newest report's category wins a tie on time by the higher id", () => {
    const t = NOW - DAY_MS;
    const older = { reporterId: "x", severity: 3, createdAtMs: t, status: "pending", category: "SPAM", id: 10 } as const;
    const newer = { reporterId: "a", severity: 3, createdAtMs: t, status: "pending", category: "SSH", id: 11 } as const;
    expect(scoreReports([older, newer], NOW).lastCategory).toBe("SSH");
    expect(scoreReports([newer, older], NOW).lastCategory).toBe("SSH");
  });
});

describe("configurable parameters", () => {
  test("the defaults are the contract's", () => {
    expect(DEFAULT_SCORING_PARAMETERS).toEqual({
      halfLifeDays: 30,
      severityWeights: { 1: 0.2, 2: 0.4, 3: 0.6, 4: 0.8, 5: 1.0 },
      verifiedMultiplier: 2,
      perReporterCap: 1.5,
      scale: 1.5,
      riskThresholds: { low: 80, medium: 50, high: 20 },
      retentionDays: 365,
    });
    expect(scoringParameterProblems(DEFAULT_SCORING_PARAMETERS)).toEqual([]);
  });

  test("a 10-day half-life halves a severity-5 report in 10 days: 72", () => {
    const params = resolveScoringParameters({ halfLifeDays: 10 });
    expect(scoreReports([report("a", 5, 10)], NOW, params).reputationScore).toBe(72);
    expect(params.severityWeights[5]).toBe(1);
  });

  test("a cap of 3 lets one reporter's ten reports weigh 3: 14", () => {
    const params = resolveScoringParameters({ perReporterCap: 3 });
    expect(scoreReports(Array.from({ length: 10 }, () => report("a", 5, 0)), NOW, params).reputationScore).toBe(14);
  });

  test("partial overrides of weights and thresholds keep the other defaults", () => {
    const params = resolveScoringParameters({ severityWeights: { 5: 1.5 }, riskThresholds: { medium: 40 } });
    expect(params.severityWeights).toEqual({ 1: 0.2, 2: 0.4, 3: 0.6, 4: 0.8, 5: 1.5 });
    expect(params.riskThresholds).toEqual({ low: 80, medium: 40, high: 20 });
    const s = scoreReports([report("a", 5, 0)], NOW, params);
    expect(s.reputationScore).toBe(37);
    expect(s.riskLevel).toBe("HIGH");
  });

  test("a 30-day retention drops a 31-day-old report", () => {
    const params = resolveScoringParameters({ retentionDays: 30 });
    expect(scoreReports([report("a", 5, 31)], NOW, params).totalReports).toBe(0);
    expect(scoreReports([report("a", 5, 29)], NOW, params).totalReports).toBe(1);
  });

  test("bad values are all listed in one validation_failed error", () => {
    let error: unknown;
    try {
      resolveScoringParameters({ halfLifeDays: 0, scale: -1, severityWeights: { 2: Number.NaN }, retentionDays: 1.5, riskThresholds: { low: 10 } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).errorCode).toBe("validation_failed");
    expect((error as AppError).details!.map((d) => d.field)).toEqual([
      "halfLifeDays",
      "severityWeights.2",
      "scale",
      "retentionDays",
      "riskThresholds",
    ]);
  });

  test("GET /v1/scoring's view shows the parameters and the score range of each level", () => {
    const view = scoringParametersView();
    expect(view.halfLifeDays).toBe(30);
    expect(view.severityWeights).toEqual({ "1": 0.2, "2": 0.4, "3": 0.6, "4": 0.8, "5": 1 });
    expect(view.riskLevels).toEqual([
      { level: "LOW", minScore: 80, maxScore: 100 },
      { level: "MEDIUM", minScore: 50, maxScore: 79 },
      { level: "HIGH", minScore: 20, maxScore: 49 },
      { level: "CRITICAL", minScore: 0, maxScore: 19 },
    ]);
    expect(JSON.parse(JSON.stringify(view))).toEqual(view);
  });

  test("scoreFromWeight is round(100·e^(−Σw/scale))", () => {
    expect([0, 0.2, 1, 1.5, 3, 10].map((w) => scoreFromWeight(w))).toEqual([100, 88, 51, 37, 14, 0]);
  });
});

describe("when the rescore job is next due", () => {
  test("nothing counts: never", () => {
    expect(nextRescoreDueMs([], NOW)).toBeNull();
    expect(nextRescoreDueMs([report("a", 5, 0, "rejected")], NOW)).toBeNull();
  });

  // Python: the score of one fresh severity-5 report reaches 52 at 30·log2(1 / (1.5·ln(100/51.5))) days
  // = 17 306 716.95 ms, and LOW (80) at 46.1705 days = 3 989 133 140 ms (rounded up).
  test.each([
    ["score", 17_306_717, 52],
    ["riskLevel", 3_989_133_140, 80],
  ] as const)("by %s: the first millisecond it changes", (granularity, afterMs, newScore) => {
    const r = report("a", 5, 0);
    const due = nextRescoreDueMs([r], NOW, DEFAULT_SCORING_PARAMETERS, granularity)!;
    expect(Math.abs(due - (NOW + afterMs))).toBeLessThanOrEqual(1);
    expect(scoreOf([r], due)).toBe(newScore);
    expect(scoreOf([r], due - 1)).toBe(newScore === 52 ? 51 : 79);
  });

  test("several reporters: at the due time the score differs, a millisecond before it does not", () => {
    const reports = [report("a", 5, 3, "verified"), report("a", 4, 1), report("b", 2, 40), report("c", 3, 0.5)];
    const before = scoreOf(reports);
    const due = nextRescoreDueMs(reports, NOW)!;
    expect(due).toBeGreaterThan(NOW);
    expect(scoreOf(reports, due - 1)).toBe(before);
    expect(scoreOf(reports, due)).toBe(before + 1);
  });

  test("a score already at 100 is due when its oldest report passes retention", () => {
    const r = report("a", 1, 300);
    expect(scoreOf([r])).toBe(100);
    expect(nextRescoreDueMs([r], NOW)).toBe(r.createdAtMs + 365 * DAY_MS + 1);
  });
});
