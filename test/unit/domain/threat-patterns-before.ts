// The pattern search as it was before it ran in steps (src/domain/threat-patterns.ts at main ebacc73): a group
// became an observation per report, copied, sorted by time and scanned with a map keyed by address text, all in
// one go. Kept as the reference the stepped search must match exactly (threat-detection-differential.test.ts).
// The helpers it shared and still shares (group keys, the order of patterns) come from the source.

import { cidrOf, compareIp, type Ip } from "../../../src/domain/ip";
import {
  byKindAndKey,
  campaignKeyOf,
  CAMPAIGN_MIN_PREFIX,
  type DetectedPattern,
  subnetKeyOf,
  type ThreatObservation,
  type ThreatThresholds,
} from "../../../src/domain/threat-patterns";

export function detectPatternsBefore(observations: Iterable<ThreatObservation>, thresholds: ThreatThresholds): DetectedPattern[] {
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

function subnetBurst(group: readonly ThreatObservation[], thresholds: ThreatThresholds): DetectedPattern | null {
  if (group.length < thresholds.subnetMinAddresses) return null;
  const span = densestSpan(group, thresholds.windowMs, thresholds.subnetMinAddresses);
  if (!span) return null;
  const categories = new Set(span.reports.map((r) => r.category));
  const ip = group[0].ip;
  const key = cidrOf(ip, ip.version === 4 ? thresholds.ipv4SubnetPrefix : thresholds.ipv6SubnetPrefix).text;
  return {
    kind: "subnet_burst",
    patternKey: key,
    cidr: key,
    asn: sameAsn(span.reports),
    category: categories.size === 1 ? span.reports[0].category : null,
    addresses: span.addresses.map((a) => a.text),
    windowStartMs: span.startMs,
    windowEndMs: span.endMs,
  };
}

function categoryCampaign(key: string, group: readonly ThreatObservation[], thresholds: ThreatThresholds): DetectedPattern | null {
  if (group.length < thresholds.campaignMinAddresses) return null;
  const span = densestSpan(group, thresholds.windowMs, thresholds.campaignMinAddresses);
  if (!span) return null;
  return {
    kind: "category_campaign",
    patternKey: key,
    cidr: campaignCidrBefore(span.addresses),
    asn: group[0].asn,
    category: group[0].category,
    addresses: span.addresses.map((a) => a.text),
    windowStartMs: span.startMs,
    windowEndMs: span.endMs,
  };
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

interface Span {
  reports: ThreatObservation[];
  addresses: Ip[];
  startMs: number;
  endMs: number;
}

function densestSpan(group: readonly ThreatObservation[], windowMs: number, min: number): Span | null {
  const sorted = [...group].sort((a, b) => a.atMs - b.atMs);
  const inWindow = new Map<string, number>();
  let best: { from: number; to: number; distinct: number } | null = null;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    const text = sorted[to].ip.text;
    inWindow.set(text, (inWindow.get(text) ?? 0) + 1);
    while (sorted[to].atMs - sorted[from].atMs > windowMs) {
      const old = sorted[from++].ip.text;
      const n = inWindow.get(old)! - 1;
      if (n === 0) inWindow.delete(old);
      else inWindow.set(old, n);
    }
    if (inWindow.size >= min && (best === null || inWindow.size > best.distinct)) best = { from, to, distinct: inWindow.size };
  }
  if (best === null) return null;
  const reports = sorted.slice(best.from, best.to + 1);
  const byText = new Map<string, Ip>();
  for (const r of reports) byText.set(r.ip.text, r.ip);
  return { reports, addresses: [...byText.values()].sort(compareIp), startMs: reports[0].atMs, endMs: reports[reports.length - 1].atMs };
}

function sameAsn(reports: readonly ThreatObservation[]): number | null {
  const asn = reports[0].asn;
  return reports.every((r) => r.asn === asn) ? asn : null;
}

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

export function campaignCidrBefore(addresses: readonly Ip[]): string {
  const covering = coveringCidrBefore(addresses);
  const [network, length] = covering.split("/");
  const version = network.includes(":") ? 6 : 4;
  const minimum = CAMPAIGN_MIN_PREFIX[version];
  if (Number(length) >= minimum) return covering;
  const blocks = new Map<string, { network: Ip; count: number }>();
  for (const ip of addresses) {
    if (ip.version !== version) continue;
    const block = cidrOf(ip, minimum);
    const seen = blocks.get(block.text) ?? { network: block.network, count: 0 };
    seen.count++;
    blocks.set(block.text, seen);
  }
  let best: { text: string; network: Ip; count: number } | null = null;
  for (const [text, { network, count }] of blocks) {
    if (best === null || count > best.count || (count === best.count && compareIp(network, best.network) < 0)) best = { text, network, count };
  }
  return best!.text;
}

function coveringCidrBefore(addresses: readonly Ip[]): string {
  const v4 = addresses.filter((ip) => ip.version === 4);
  const v6 = addresses.filter((ip) => ip.version === 6);
  const family = v4.length >= v6.length ? v4 : v6;
  if (family.length === 0) throw new RangeError("no addresses to cover");
  let prefix = family[0].version === 4 ? 32 : 128;
  for (const ip of family) prefix = Math.min(prefix, commonPrefixLength(family[0], ip));
  return cidrOf(family[0], prefix).text;
}
