// The AbuseIPDB API v2 compatibility feature (contract 13): thin adapters over the services `/v1` uses, so a
// report made through `/api/v2` is the same report as one made through `/v1` (one budget, one 15-minute rule, the
// same credits and webhook events). This folder shapes the answers; src/http/abuseipdb/ reads the requests.
//
// This file: what every answer shares.

import type { Category } from "../../domain/categories";
import { nearestAbuseIpdbNumber } from "../../domain/categories";

/** AbuseIPDB's timestamps: seconds, no fraction, `+00:00` (clients parse them as ATOM and fail on `.000Z`). */
export function abuseIpdbTime(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}+00:00`;
}

/** AbuseIPDB's score: how sure that the address is abusive, 0-100; 0 for an address nobody reported. */
export function confidenceOf(reputationScore: number): number {
  return 100 - reputationScore;
}

/** A report's categories as AbuseIPDB numbers (ours carry one each). */
export function categoryNumbers(category: string): number[] {
  return [nearestAbuseIpdbNumber(category as Category)];
}

/** 422 for one bad parameter, naming it (the http layer writes AbuseIPDB's error body). */
export class ParameterError extends Error {
  constructor(
    readonly parameter: string,
    message: string,
  ) {
    super(message);
  }
}

/** Days of history an answer covers: `maxAgeInDays`, 1..365, default 30. */
export const DEFAULT_MAX_AGE_DAYS = 30;
export const MAX_AGE_DAYS = 365;
