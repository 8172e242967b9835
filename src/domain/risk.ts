// Risk levels (contract 5.7): which level a reputation score falls in under configurable thresholds, their order
// for "minimum level" filters, the lowercase `threatLevel` form and a small numeric code for typed arrays.

import { type FieldError, validationFailed } from "./errors";

/** The levels from least to most dangerous; a level's position is its code and its rank. */
export const RISK_LEVELS = ["LOW", "MEDIUM", "HIGH", "CRITICAL"] as const;

export type RiskLevel = (typeof RISK_LEVELS)[number];
/** `threatLevel` in the IP detail record (5.1). */
export type ThreatLevel = Lowercase<RiskLevel>;
/** 0 LOW, 1 MEDIUM, 2 HIGH, 3 CRITICAL: fits a Uint8Array and compares as the levels do. */
export type RiskCode = 0 | 1 | 2 | 3;

/**
 * The lowest reputation score of each level; scores below `high` are CRITICAL. A score of 0 is the most abusive,
 * 100 the cleanest, so a level covers [its minimum, the next level's minimum − 1].
 */
export interface RiskThresholds {
  readonly low: number;
  readonly medium: number;
  readonly high: number;
}

/** 80–100 LOW, 50–79 MEDIUM, 20–49 HIGH, 0–19 CRITICAL. */
export const DEFAULT_RISK_THRESHOLDS: RiskThresholds = Object.freeze({ low: 80, medium: 50, high: 20 });

/** The level of a reputation score. */
export function riskLevelOf(score: number, thresholds: RiskThresholds = DEFAULT_RISK_THRESHOLDS): RiskLevel {
  if (score >= thresholds.low) return "LOW";
  if (score >= thresholds.medium) return "MEDIUM";
  if (score >= thresholds.high) return "HIGH";
  return "CRITICAL";
}

/** The code of a reputation score's level, for the index's typed arrays. */
export function riskCodeOfScore(score: number, thresholds: RiskThresholds = DEFAULT_RISK_THRESHOLDS): RiskCode {
  if (score >= thresholds.low) return 0;
  if (score >= thresholds.medium) return 1;
  if (score >= thresholds.high) return 2;
  return 3;
}

export function riskCode(level: RiskLevel): RiskCode {
  return RISK_LEVELS.indexOf(level) as RiskCode;
}

export function riskLevelFromCode(code: number): RiskLevel {
  const level = RISK_LEVELS[code];
  if (level === undefined) throw new RangeError(`no risk level with code ${code}`);
  return level;
}

/** Whether `level` is `minimum` or more dangerous (blocklist `riskLevel=HIGH` lists HIGH and CRITICAL). */
export function isAtLeast(level: RiskLevel, minimum: RiskLevel): boolean {
  return riskCode(level) >= riskCode(minimum);
}

/** Orders levels from least to most dangerous, for Array.prototype.sort. */
export function compareRiskLevels(a: RiskLevel, b: RiskLevel): number {
  return riskCode(a) - riskCode(b);
}

/** The range of scores a level covers under the thresholds (inclusive), for `GET /v1/scoring`. */
export function scoreRangeOf(level: RiskLevel, thresholds: RiskThresholds = DEFAULT_RISK_THRESHOLDS): { min: number; max: number } {
  switch (level) {
    case "LOW":
      return { min: thresholds.low, max: 100 };
    case "MEDIUM":
      return { min: thresholds.medium, max: thresholds.low - 1 };
    case "HIGH":
      return { min: thresholds.high, max: thresholds.medium - 1 };
    case "CRITICAL":
      return { min: 0, max: thresholds.high - 1 };
  }
}

/**
 * The highest score that is at least `minimum` dangerous: a "minimum level" filter is `score <= this`
 * (HIGH under the defaults → 49).
 */
export function maxScoreAtLeast(minimum: RiskLevel, thresholds: RiskThresholds = DEFAULT_RISK_THRESHOLDS): number {
  return scoreRangeOf(minimum, thresholds).max;
}

export function threatLevel(level: RiskLevel): ThreatLevel {
  return level.toLowerCase() as ThreatLevel;
}

export function isRiskLevel(value: unknown): value is RiskLevel {
  return typeof value === "string" && (RISK_LEVELS as readonly string[]).includes(value);
}

/** Reads a level case-insensitively (`high`, `HIGH`), surrounding whitespace ignored; null when it is none. */
export function tryParseRiskLevel(input: unknown): RiskLevel | null {
  if (typeof input !== "string") return null;
  const key = input.trim().toUpperCase();
  return isRiskLevel(key) ? key : null;
}

/** Parses a level or throws AppError validation_failed (400) naming the allowed values. */
export function parseRiskLevel(input: unknown, field = "riskLevel"): RiskLevel {
  const level = tryParseRiskLevel(input);
  if (level === null) {
    const shown = typeof input === "string" ? `"${input}"` : String(input);
    const message = `unknown risk level ${shown}; allowed values: ${RISK_LEVELS.join(", ")}`;
    throw validationFailed([{ field, message }], `Invalid ${field}: ${message}`);
  }
  return level;
}

/**
 * What is wrong with a set of thresholds: each must be an integer and 1 ≤ high < medium < low ≤ 100, so every
 * level covers at least one score. Empty when they are fine. `prefix` names the fields (`riskThresholds.low`).
 */
export function riskThresholdProblems(thresholds: RiskThresholds, prefix = "riskThresholds"): FieldError[] {
  const problems: FieldError[] = [];
  for (const key of ["low", "medium", "high"] as const) {
    const v = thresholds[key];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 100) {
      problems.push({ field: `${prefix}.${key}`, message: "must be an integer from 1 to 100" });
    }
  }
  if (problems.length === 0 && !(thresholds.high < thresholds.medium && thresholds.medium < thresholds.low)) {
    problems.push({ field: prefix, message: "must satisfy high < medium < low so that every level covers some scores" });
  }
  return problems;
}
