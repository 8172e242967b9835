import { describe, expect, test } from "bun:test";
import { AppError } from "../../../src/domain/errors";
import {
  DEFAULT_RISK_THRESHOLDS,
  RISK_LEVELS,
  compareRiskLevels,
  isAtLeast,
  maxScoreAtLeast,
  parseRiskLevel,
  riskCode,
  riskCodeOfScore,
  riskLevelFromCode,
  riskLevelOf,
  riskThresholdProblems,
  scoreRangeOf,
  threatLevel,
  tryParseRiskLevel,
} from "../../../src/domain/risk";

describe("the level of a score under the default thresholds", () => {
  test.each([
    [100, "LOW"], [80, "LOW"], [79, "MEDIUM"], [50, "MEDIUM"], [49, "HIGH"], [20, "HIGH"], [19, "CRITICAL"], [0, "CRITICAL"],
  ] as const)("%i is %s", (score, level) => {
    expect(riskLevelOf(score)).toBe(level);
    expect(riskCodeOfScore(score)).toBe(riskCode(level));
  });

  test("every score 0..100 falls in exactly the range scoreRangeOf gives for its level", () => {
    for (let score = 0; score <= 100; score++) {
      const { min, max } = scoreRangeOf(riskLevelOf(score));
      expect(score >= min && score <= max).toBe(true);
    }
  });
});

describe("configured thresholds", () => {
  const t = { low: 90, medium: 60, high: 30 };
  test.each([
    [90, "LOW"], [89, "MEDIUM"], [60, "MEDIUM"], [59, "HIGH"], [30, "HIGH"], [29, "CRITICAL"],
  ] as const)("%i is %s under 90/60/30", (score, level) => {
    expect(riskLevelOf(score, t)).toBe(level);
    expect(riskCodeOfScore(score, t)).toBe(riskCode(level));
  });

  test.each([
    ["LOW", 90, 100], ["MEDIUM", 60, 89], ["HIGH", 30, 59], ["CRITICAL", 0, 29],
  ] as const)("%s covers %i..%i", (level, min, max) => {
    expect(scoreRangeOf(level, t)).toEqual({ min, max });
  });

  test.each([
    [{ low: 80, medium: 50, high: 20 }, []],
    [{ low: 100, medium: 2, high: 1 }, []],
    [{ low: 80, medium: 80, high: 20 }, [{ field: "riskThresholds", message: "must satisfy high < medium < low so that every level covers some scores" }]],
    [{ low: 20, medium: 50, high: 80 }, [{ field: "riskThresholds", message: "must satisfy high < medium < low so that every level covers some scores" }]],
    [{ low: 101, medium: 50, high: 0 }, [
      { field: "riskThresholds.low", message: "must be an integer from 1 to 100" },
      { field: "riskThresholds.high", message: "must be an integer from 1 to 100" },
    ]],
    [{ low: 80, medium: 50.5, high: 20 }, [{ field: "riskThresholds.medium", message: "must be an integer from 1 to 100" }]],
  ])("%p: problems %p", (thresholds, problems) => {
    expect(riskThresholdProblems(thresholds)).toEqual(problems);
  });
});

describe("ordering for minimum-level filters", () => {
  test("codes run LOW 0 .. CRITICAL 3 and back", () => {
    expect(RISK_LEVELS.map(riskCode)).toEqual([0, 1, 2, 3]);
    expect([0, 1, 2, 3].map(riskLevelFromCode)).toEqual(["LOW", "MEDIUM", "HIGH", "CRITICAL"]);
    expect(() => riskLevelFromCode(4)).toThrow(RangeError);
  });

  test.each([
    ["CRITICAL", "HIGH", true], ["HIGH", "HIGH", true], ["MEDIUM", "HIGH", false], ["LOW", "MEDIUM", false],
    ["LOW", "LOW", true], ["MEDIUM", "LOW", true], ["CRITICAL", "CRITICAL", true], ["HIGH", "CRITICAL", false],
  ] as const)("%s is at least %s: %p", (level, minimum, expected) => {
    expect(isAtLeast(level, minimum)).toBe(expected);
  });

  test.each([
    ["LOW", 100], ["MEDIUM", 79], ["HIGH", 49], ["CRITICAL", 19],
  ] as const)("minimum %s means score ≤ %i", (level, max) => {
    expect(maxScoreAtLeast(level)).toBe(max);
    for (let score = 0; score <= 100; score++) expect(isAtLeast(riskLevelOf(score), level)).toBe(score <= max);
  });

  test("sorting puts the least dangerous first", () => {
    expect(["CRITICAL", "LOW", "HIGH", "MEDIUM"].sort((a, b) => compareRiskLevels(a as never, b as never))).toEqual([...RISK_LEVELS]);
  });
});

describe("parsing a level", () => {
  test.each([
    ["HIGH", "HIGH"], ["high", "HIGH"], ["High", "HIGH"], [" critical ", "CRITICAL"], ["medium", "MEDIUM"], ["low", "LOW"],
  ] as const)("%p reads as %s", (input, level) => {
    expect(tryParseRiskLevel(input)).toBe(level);
    expect(parseRiskLevel(input)).toBe(level);
  });

  test.each(["", "severe", "HIGHEST", "3", 2, null])("%p is not a level: 400 naming the allowed values", (input) => {
    expect(tryParseRiskLevel(input)).toBeNull();
    let error: unknown;
    try {
      parseRiskLevel(input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    const appError = error as AppError;
    expect(appError.errorCode).toBe("validation_failed");
    expect(appError.details![0].field).toBe("riskLevel");
    expect(appError.details![0].message).toContain("allowed values: LOW, MEDIUM, HIGH, CRITICAL");
  });

  test.each([
    ["LOW", "low"], ["MEDIUM", "medium"], ["HIGH", "high"], ["CRITICAL", "critical"],
  ] as const)("threatLevel of %s is %s", (level, lower) => {
    expect(threatLevel(level)).toBe(lower);
  });

  test("the defaults are 80/50/20", () => {
    expect(DEFAULT_RISK_THRESHOLDS).toEqual({ low: 80, medium: 50, high: 20 });
  });
});
