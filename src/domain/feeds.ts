// Feeds and their listings (contract section 12): what a feed is called, how a listing scores, and the record a
// listed network carries in the index. A listing counts like a verified report of the feed's severity from the
// reporter `feed:NAME`, at full weight while the feed lists it (see ScoredReport.listed).

import { isAbsolute } from "node:path";
import type { Category } from "./categories";
import { AppError, validationFailed } from "./errors";
import { type ScoredReport, type ScoringParameters, type Severity, scoreReports } from "./scoring";

/** One feed's listing of one network or address. */
export interface Listing {
  readonly feed: string;
  readonly category: Category;
  readonly severity: Severity;
  /** When the feed last put this listing in (its latest import or refresh), ms. */
  readonly listedAtMs: number;
}

/** Feed names: what `networks[].source` shows and `feed:NAME` reports under. */
const FEED_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function parseFeedName(input: unknown, field = "name"): string {
  if (typeof input !== "string" || !FEED_NAME.test(input)) {
    throw validationFailed([{ field, message: "a feed name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit" }]);
  }
  return input;
}

export const DEFAULT_FEED_SEVERITY: Severity = 4;

export function parseFeedSeverity(input: unknown, field = "severity"): Severity {
  if (input === undefined || input === null || input === "") return DEFAULT_FEED_SEVERITY;
  const n = typeof input === "number" ? input : typeof input === "string" && /^[1-5]$/.test(input) ? Number(input) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > 5) throw validationFailed([{ field, message: "severity is an integer 1 to 5" }]);
  return n as Severity;
}

export const feedReporter = (feed: string): string => `feed:${feed}`;

/** The listings as reports for scoring. */
export function listingReports(listings: readonly Listing[]): ScoredReport[] {
  return listings.map((l) => ({ reporterId: feedReporter(l.feed), severity: l.severity, createdAtMs: l.listedAtMs, status: "verified", category: l.category, listed: true }));
}

/** What an address inside listed networks (and nothing else) gets: score, counts and categories of the listings. */
export interface ListingScore {
  reputationScore: number;
  listings: number;
  categoriesMask: number;
  /** The latest listedAtMs. */
  lastListedMs: number;
}

export function scoreListings(listings: readonly Listing[], nowMs: number, params: ScoringParameters): ListingScore {
  const score = scoreReports(listingReports(listings), nowMs, params);
  let last = Number.NaN;
  for (const l of listings) if (!(l.listedAtMs <= last)) last = l.listedAtMs;
  return { reputationScore: score.reputationScore, listings: score.totalReports, categoriesMask: score.categoriesMask, lastListedMs: last };
}

/**
 * A scheduled feed's source: exactly one of a URL (http or https) and an absolute file path. A relative path would
 * be read against the working directory of whichever process refreshes the feed (the server's is not the shell's
 * that added it), so the CLI resolves it first and the API refuses it.
 */
export function parseFeedSource(url: unknown, filePath: unknown): { url: string | null; filePath: string | null } {
  const hasUrl = url !== undefined && url !== null && url !== "";
  const hasFile = filePath !== undefined && filePath !== null && filePath !== "";
  if (hasUrl === hasFile) throw new AppError("bad_request", "A feed is refreshed from exactly one source: a url or a file path");
  if (hasUrl) {
    let parsed: URL | null = null;
    try {
      parsed = typeof url === "string" ? new URL(url) : null;
    } catch {
      parsed = null;
    }
    if (parsed === null || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      throw validationFailed([{ field: "url", message: "url must be an http or https URL" }]);
    }
    return { url: parsed.toString(), filePath: null };
  }
  if (typeof filePath !== "string" || filePath.includes("\0")) throw validationFailed([{ field: "file", message: "file must be a path" }]);
  if (!isAbsolute(filePath)) throw validationFailed([{ field: "file", message: `file must be an absolute path (the server does not read "${filePath}" from the caller's directory)` }]);
  return { url: null, filePath };
}
