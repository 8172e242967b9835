// Threat patterns of contract section 9, found in a list of recent reports: a `subnet_burst` (many distinct
// addresses of one /24 or /64 reported within an hour) and a `category_campaign` (one category against many
// distinct addresses of one autonomous system within an hour). Pure: the reports and thresholds are arguments.
// The search of a group can run a step at a time (the ...InSteps forms, see threat-span.ts), so a group of any
// size leaves the event loop free; the forms over lists of observations run it at once.
//
// Decisions where the contract is open:
// - "Within 60 minutes" is any span of at most `windowMs` (both ends included); each group is scanned with a
//   sliding window, and the span with the most distinct addresses is the one reported (the earliest on a tie).
// - Only addresses count, not reports: one address reported 50 times is one address.
// - A subnet burst names its network (`203.0.113.0/24`) and the category when every report of its span has the
//   same one, else null. A campaign is named `AS<n>:<CATEGORY>`; its CIDR is the smallest network covering the
//   addresses seen (of the family with the most of them), never wider than a /16 or /32 (see campaignCidr).

import type { Category } from "./categories";
import { DAY_MS } from "./scoring";
import { type FieldError, validationFailed } from "./errors";
import { cidrOf, compareIp, type Ip, ipv4FromNumber, type Ipv6, type NormalizedIp } from "./ip";
import { Pace } from "./pace";
import { allAtOnce } from "./steps";
import { densestSpanInSteps, type GroupReports } from "./threat-span";
import type { ThreatKind } from "./webhook-payload";

export type { ThreatKind };

export interface ThreatThresholds {
  /** The span the addresses must fall in (contract: 60 minutes). */
  readonly windowMs: number;
  /** Distinct addresses of one subnet that make a burst (contract: 5). */
  readonly subnetMinAddresses: number;
  /** The subnet of an IPv4 address (contract: /24). */
  readonly ipv4SubnetPrefix: number;
  /** The subnet of an IPv6 address (contract: /64). */
  readonly ipv6SubnetPrefix: number;
  /** Distinct addresses of one ASN attacked with one category that make a campaign (contract: 20). */
  readonly campaignMinAddresses: number;
  /** The same pattern is reported at most once in this long (contract: 24 hours). */
  readonly repeatAfterMs: number;
}

export const DEFAULT_THREAT_THRESHOLDS: ThreatThresholds = Object.freeze({
  windowMs: 60 * 60_000,
  subnetMinAddresses: 5,
  ipv4SubnetPrefix: 24,
  ipv6SubnetPrefix: 64,
  campaignMinAddresses: 20,
  repeatAfterMs: DAY_MS,
});

/** The defaults with `overrides` applied, validated; throws validation_failed naming every bad field. */
export function resolveThreatThresholds(overrides: Partial<ThreatThresholds> = {}): ThreatThresholds {
  const t: ThreatThresholds = { ...DEFAULT_THREAT_THRESHOLDS, ...overrides };
  const problems: FieldError[] = [];
  const integer = (field: keyof ThreatThresholds, min: number, max: number) => {
    const v = t[field];
    if (!Number.isInteger(v) || v < min || v > max) problems.push({ field, message: `must be an integer from ${min} to ${max}` });
  };
  integer("windowMs", 1, 7 * DAY_MS);
  integer("subnetMinAddresses", 2, 1_000_000);
  integer("ipv4SubnetPrefix", 8, 32);
  integer("ipv6SubnetPrefix", 16, 128);
  integer("campaignMinAddresses", 2, 1_000_000);
  integer("repeatAfterMs", 0, 365 * DAY_MS);
  if (problems.length > 0) throw validationFailed(problems, "Invalid threat detection thresholds");
  return Object.freeze(t);
}

/** One counting report as detection sees it. */
export interface ThreatObservation {
  readonly ip: Ip;
  readonly category: Category;
  readonly atMs: number;
  /** The address's autonomous system, or null when unknown (it then takes part in no campaign). */
  readonly asn: number | null;
}

export interface DetectedPattern {
  kind: ThreatKind;
  /** What the once-per-24-hours rule compares: the subnet's CIDR, or `AS<n>:<CATEGORY>`. */
  patternKey: string;
  /** The subnet of a burst; the smallest network covering a campaign's addresses. */
  cidr: string;
  asn: number | null;
  category: Category | null;
  /** The distinct addresses of the span, sorted (IPv4 first, then IPv6, each ascending). */
  addresses: NormalizedIp[];
  /** First and last report of the span. */
  windowStartMs: number;
  windowEndMs: number;
}

/** Every pattern in `observations` (any order), sorted by kind, then pattern key. */
export function detectPatterns(observations: Iterable<ThreatObservation>, thresholds: ThreatThresholds = DEFAULT_THREAT_THRESHOLDS): DetectedPattern[] {
  const subnets = new Map<number | string, ThreatObservation[]>();
  const campaigns = new Map<string, ThreatObservation[]>();
  for (const o of observations) {
    push(subnets, subnetKeyOf(o.ip, thresholds), o);
    const campaign = campaignKeyOf(o);
    if (campaign !== null) push(campaigns, campaign, o);
  }
  const found: DetectedPattern[] = [];
  for (const group of subnets.values()) {
    const burst = subnetBurst(group, thresholds);
    if (burst) found.push(burst);
  }
  for (const [key, group] of campaigns) {
    const campaign = categoryCampaign(key, group, thresholds);
    if (campaign) found.push(campaign);
  }
  return found.sort(byKindAndKey);
}

// Groups are keyed cheaply (an IPv4 subnet by its number, a campaign by ASN and category); the text of a key
// is made only for the few groups that hold a pattern. A group with fewer reports than the threshold cannot
// hold one and is skipped unsorted: most subnets have a report or two.

/** An address's subnet as a group key: an IPv4 subnet's number, an IPv6 subnet's CIDR text. */
export function subnetKeyOf(ip: Ip, thresholds: ThreatThresholds): number | string {
  return ip.version === 4 ? ipv4SubnetKeyOf(ip.value, thresholds) : cidrOf(ip, thresholds.ipv6SubnetPrefix).text;
}

/** subnetKeyOf of the IPv4 address whose number is `value`. */
export function ipv4SubnetKeyOf(value: number, thresholds: ThreatThresholds): number {
  return value >>> (32 - thresholds.ipv4SubnetPrefix);
}

/** A report's campaign as a group key (`AS<n>:<CATEGORY>`), or null when its address has no known ASN. */
export function campaignKeyOf(o: Pick<ThreatObservation, "asn" | "category">): string | null {
  return o.asn === null ? null : `AS${o.asn}:${o.category}`;
}

/** The burst among the reports of one subnet, if they hold one. */
export function subnetBurst(group: readonly ThreatObservation[], thresholds: ThreatThresholds): DetectedPattern | null {
  return allAtOnce(subnetBurstInSteps(reportsOf(group), thresholds, new Pace(Number.POSITIVE_INFINITY)));
}

/** The campaign among the reports of one ASN and category (`key`), if they hold one. */
export function categoryCampaign(key: string, group: readonly ThreatObservation[], thresholds: ThreatThresholds): DetectedPattern | null {
  return allAtOnce(categoryCampaignInSteps(key, reportsOf(group), thresholds, new Pace(Number.POSITIVE_INFINITY)));
}

/** subnetBurst a step at a time (see Pace), for a group of any size. */
export function* subnetBurstInSteps(group: GroupReports, thresholds: ThreatThresholds, pace: Pace): Generator<void, DetectedPattern | null> {
  if (group.size < thresholds.subnetMinAddresses) return null;
  const span = yield* densestSpanInSteps(group, thresholds.windowMs, thresholds.subnetMinAddresses, pace);
  if (!span) return null;
  const ip = ipAt(group, 0);
  const key = cidrOf(ip, ip.version === 4 ? thresholds.ipv4SubnetPrefix : thresholds.ipv6SubnetPrefix).text;
  const shared = yield* sharedInSteps(group, span.reports, pace);
  return {
    kind: "subnet_burst",
    patternKey: key,
    cidr: key,
    asn: shared.asn,
    category: shared.category,
    addresses: yield* textsInSteps(span.addresses, pace),
    windowStartMs: span.startMs,
    windowEndMs: span.endMs,
  };
}

/** categoryCampaign a step at a time (see Pace), for a group of any size. */
export function* categoryCampaignInSteps(key: string, group: GroupReports, thresholds: ThreatThresholds, pace: Pace): Generator<void, DetectedPattern | null> {
  if (group.size < thresholds.campaignMinAddresses) return null;
  const span = yield* densestSpanInSteps(group, thresholds.windowMs, thresholds.campaignMinAddresses, pace);
  if (!span) return null;
  return {
    kind: "category_campaign",
    patternKey: key,
    cidr: yield* campaignCidrInSteps(span.addresses, pace),
    asn: group.asn(0),
    category: group.category(0),
    addresses: yield* textsInSteps(span.addresses, pace),
    windowStartMs: span.startMs,
    windowEndMs: span.endMs,
  };
}

/** Patterns in their reporting order: subnet bursts first, then campaigns, each by pattern key. */
export function byKindAndKey(a: DetectedPattern, b: DetectedPattern): number {
  if (a.kind !== b.kind) return a.kind === "subnet_burst" ? -1 : 1;
  return a.patternKey < b.patternKey ? -1 : a.patternKey > b.patternKey ? 1 : 0;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** A list of observations as a group's reports. */
function reportsOf(observations: readonly ThreatObservation[]): GroupReports {
  return {
    size: observations.length,
    atMs: (p) => observations[p].atMs,
    ipv4: (p) => {
      const ip = observations[p].ip;
      return ip.version === 4 ? ip.value : -1;
    },
    ipv6: (p) => observations[p].ip as Ipv6,
    category: (p) => observations[p].category,
    asn: (p) => observations[p].asn,
  };
}

function ipAt(group: GroupReports, position: number): Ip {
  const v4 = group.ipv4(position);
  return v4 >= 0 ? ipv4FromNumber(v4) : group.ipv6(position);
}

/** The category and the ASN of the reports at `positions` when all of them have the same, else null. */
function* sharedInSteps(group: GroupReports, positions: Int32Array, pace: Pace): Generator<void, { category: Category | null; asn: number | null }> {
  let category: Category | null = group.category(positions[0]);
  let asn = group.asn(positions[0]);
  for (let k = 1; k < positions.length; k++) {
    if (group.category(positions[k]) !== category) category = null;
    if (group.asn(positions[k]) !== asn) asn = null;
    if (pace.spend()) yield;
  }
  return { category, asn };
}

function* textsInSteps(addresses: readonly Ip[], pace: Pace): Generator<void, NormalizedIp[]> {
  const texts = new Array<NormalizedIp>(addresses.length);
  for (let i = 0; i < addresses.length; i++) {
    texts[i] = addresses[i].text;
    if (pace.spend()) yield;
  }
  return texts;
}

/** Leading bits two addresses of one family share. */
function commonPrefixLength(a: Ip, b: Ip): number {
  if (a.version === 4 && b.version === 4) {
    const x = (a.value ^ b.value) >>> 0;
    return x === 0 ? 32 : Math.clz32(x);
  }
  if (a.version === 6 && b.version === 6) {
    for (let i = 0; i < 4; i++) {
      const x = (a.words[i] ^ b.words[i]) >>> 0;
      if (x !== 0) return 32 * i + Math.clz32(x);
    }
    return 128;
  }
  throw new RangeError("addresses of different families share no prefix");
}

/** A campaign's network is never wider than this (IPv4 /16, IPv6 /32): see campaignCidr. */
export const CAMPAIGN_MIN_PREFIX = { 4: 16, 6: 32 } as const;

/**
 * The network a `category_campaign` names: the smallest one covering its addresses, unless that is wider than
 * a /16 (IPv4) or /32 (IPv6). An ASN's ranges are scattered, so the covering network of 20 Google addresses is
 * 0.0.0.0/0, and a receiver that blocks the `ip` of every threat would block the world. Then it is the /16 or
 * /32 holding the most of the addresses (the lowest on a tie); the full list is in GET /v1/threats.
 */
export function campaignCidr(addresses: readonly Ip[]): string {
  return allAtOnce(campaignCidrInSteps([...addresses].sort(compareIp), new Pace(Number.POSITIVE_INFINITY)));
}

/** campaignCidr of sorted addresses, a step at a time (see Pace). */
export function* campaignCidrInSteps(sorted: readonly Ip[], pace: Pace): Generator<void, string> {
  if (sorted.length === 0) throw new RangeError("no addresses to cover");
  // The family with the most addresses (IPv4 on a tie): sorted, the IPv4 ones come first.
  const ipv4s = countOfIpv4(sorted);
  const [from, to] = ipv4s >= sorted.length - ipv4s ? [0, ipv4s] : [ipv4s, sorted.length];
  // Sorted, the first and last of a family share what all of them share.
  const covering = coveringCidr([sorted[from], sorted[to - 1]]);
  const minimum = CAMPAIGN_MIN_PREFIX[sorted[from].version];
  if (Number(covering.split("/")[1]) >= minimum) return covering;
  // Sorted, the addresses of one block are next to each other: the longest run is the block with the most, and
  // the first of the longest the lowest.
  let best = from;
  let bestCount = 0;
  for (let runFrom = from, i = from; i < to; i++) {
    if (i + 1 === to || commonPrefixLength(sorted[i], sorted[i + 1]) < minimum) {
      if (i + 1 - runFrom > bestCount) {
        best = runFrom;
        bestCount = i + 1 - runFrom;
      }
      runFrom = i + 1;
    }
    if (pace.spend()) yield;
  }
  return cidrOf(sorted[best], minimum).text;
}

/** How many of `sorted` are IPv4 (they come first). */
function countOfIpv4(sorted: readonly Ip[]): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle].version === 4) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The smallest network covering `addresses` (sorted, non-empty) of the family that has the most of them. */
export function coveringCidr(addresses: readonly Ip[]): string {
  const v4 = addresses.filter((ip) => ip.version === 4);
  const v6 = addresses.filter((ip) => ip.version === 6);
  const family = v4.length >= v6.length ? v4 : v6;
  if (family.length === 0) throw new RangeError("no addresses to cover");
  let prefix = family[0].version === 4 ? 32 : 128;
  for (const ip of family) prefix = Math.min(prefix, commonPrefixLength(family[0], ip));
  return cidrOf(family[0], prefix).text;
}
