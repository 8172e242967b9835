// What a blocklist request asks for (contract 5.10): the filters and the output format, parsed from query
// parameters (the API) or flags (the offline CLI) into one normalized value, so that two requests that mean the
// same list share one ETag and one cached selection.

import { type Category, CATEGORIES, maskOf, parseCategoryList } from "../categories";
import { AppError, type FieldError, validationFailed } from "../errors";
import { type RiskCode, type RiskLevel, parseRiskLevel, riskCode } from "../risk";
import type { IpVersion } from "../ip";

export const BLOCKLIST_FORMATS = ["json", "txt", "cidr", "nft", "ipset", "csv"] as const;
export type BlocklistFormat = (typeof BLOCKLIST_FORMATS)[number];

export const DEFAULT_BLOCKLIST_FORMAT: BlocklistFormat = "json";
export const DEFAULT_MINIMUM_RISK: RiskLevel = "MEDIUM";

export interface BlocklistFilters {
  /** The categories asked for, in the contract's order; null lists every category. */
  readonly categories: readonly Category[] | null;
  /** Their bitmask; 0 when `categories` is null. An address matches when its mask shares a bit with it. */
  readonly categoriesMask: number;
  /** The minimum level: HIGH lists HIGH and CRITICAL. */
  readonly minimumRisk: RiskLevel;
  readonly minimumRiskCode: RiskCode;
  /** One family, or null for both. */
  readonly ipVersion: IpVersion | null;
  /**
   * The highest reputation score listed (100: every score; AbuseIPDB's `confidenceMinimum` asks for a bound).
   * Applied during the walk, like the risk level, so that a listed network outside the bound does not hide the
   * entries inside it that are within it.
   */
  readonly maximumScore: number;
}

export interface BlocklistRequest {
  readonly filters: BlocklistFilters;
  readonly format: BlocklistFormat;
}

/** The raw parameters, as strings (a query) or absent; an empty string counts as absent. */
export interface BlocklistParams {
  category?: unknown;
  riskLevel?: unknown;
  ipVersion?: unknown;
  format?: unknown;
}

export function blocklistFilters(
  options: { categories?: readonly Category[] | null; minimumRisk?: RiskLevel; ipVersion?: IpVersion | null; maximumScore?: number } = {},
): BlocklistFilters {
  const mask = options.categories && options.categories.length > 0 ? maskOf(options.categories) : 0;
  const minimumRisk = options.minimumRisk ?? DEFAULT_MINIMUM_RISK;
  return {
    // The contract's order, whatever order they were asked in: `ssh,spam` and `spam,ssh` are one list.
    categories: mask === 0 ? null : CATEGORIES.filter((_, bit) => (mask & (1 << bit)) !== 0),
    categoriesMask: mask,
    minimumRisk,
    minimumRiskCode: riskCode(minimumRisk),
    ipVersion: options.ipVersion ?? null,
    maximumScore: options.maximumScore ?? 100,
  };
}

const given = (v: unknown): boolean => v !== undefined && v !== null && v !== "";

/**
 * Parses `category`, `riskLevel`, `ipVersion` and `format`; every bad one is named in one validation_failed
 * error (400) that lists the allowed values. Categories and levels are read case-insensitively, as everywhere;
 * `format` too. A repeated `category` parameter (an array) is read as one comma list.
 */
export function parseBlocklistParams(params: BlocklistParams): BlocklistRequest {
  const problems: FieldError[] = [];
  const attempt = <T>(field: string, parse: () => T, fallback: T): T => {
    try {
      return parse();
    } catch (error) {
      if (error instanceof AppError && error.details) problems.push(...error.details);
      else problems.push({ field, message: error instanceof Error ? error.message : String(error) });
      return fallback;
    }
  };
  const single = (field: string, raw: unknown): string | undefined => {
    if (!given(raw)) return undefined;
    if (typeof raw !== "string") {
      problems.push({ field, message: "must be given once" });
      return undefined;
    }
    return raw;
  };

  let categories: Category[] | null = null;
  const rawCategory = Array.isArray(params.category) ? params.category.join(",") : params.category;
  if (given(rawCategory)) {
    categories = attempt("category", () => parseCategoryList(String(rawCategory), "category"), null);
  }

  const riskText = single("riskLevel", params.riskLevel);
  const minimumRisk = riskText === undefined ? DEFAULT_MINIMUM_RISK : attempt("riskLevel", () => parseRiskLevel(riskText, "riskLevel"), DEFAULT_MINIMUM_RISK);

  let ipVersion: IpVersion | null = null;
  const versionText = single("ipVersion", params.ipVersion);
  if (versionText !== undefined) {
    const v = versionText.trim();
    if (v === "4" || v === "6") ipVersion = Number(v) as IpVersion;
    else problems.push({ field: "ipVersion", message: `unknown IP version "${versionText}"; allowed values: 4, 6 (default: both)` });
  }

  let format = DEFAULT_BLOCKLIST_FORMAT;
  const formatText = single("format", params.format);
  if (formatText !== undefined) {
    const f = formatText.trim().toLowerCase();
    if ((BLOCKLIST_FORMATS as readonly string[]).includes(f)) format = f as BlocklistFormat;
    else problems.push({ field: "format", message: `unknown format "${formatText}"; allowed values: ${BLOCKLIST_FORMATS.join(", ")} (default: json)` });
  }

  if (problems.length > 0) {
    throw validationFailed(problems, `Invalid blocklist parameters: ${problems.map((p) => `${p.field}: ${p.message}`).join("; ")}`);
  }
  return { filters: blocklistFilters({ categories, minimumRisk, ipVersion }), format };
}

/**
 * A short text naming the list exactly (the same for every way of asking for it): the filter part of the ETag
 * and the key of cached selections. `m` categories mask in hex, `r` risk code, `v` family (0 both), and `s` the
 * highest score when one is set.
 */
export function filtersKey(filters: BlocklistFilters): string {
  const bound = filters.maximumScore < 100 ? `s${filters.maximumScore}` : "";
  return `m${filters.categoriesMask.toString(16)}r${filters.minimumRiskCode}v${filters.ipVersion ?? 0}${bound}`;
}

/** The `filters` object of the JSON format. */
export function filtersView(filters: BlocklistFilters): { category: Category[] | null; riskLevel: RiskLevel; ipVersion: IpVersion | null } {
  return { category: filters.categories ? [...filters.categories] : null, riskLevel: filters.minimumRisk, ipVersion: filters.ipVersion };
}

/** One line for people (comments of the nft and ipset scripts): `riskLevel MEDIUM and above, categories SSH|SPAM, IPv4 and IPv6`. */
export function describeFilters(filters: BlocklistFilters): string {
  const families = filters.ipVersion === null ? "IPv4 and IPv6" : `IPv${filters.ipVersion} only`;
  const categories = filters.categories ? `categories ${filters.categories.join("|")}` : "all categories";
  return `riskLevel ${filters.minimumRisk} and above, ${categories}, ${families}`;
}
