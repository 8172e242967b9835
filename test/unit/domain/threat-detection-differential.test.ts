// The pattern search gives exactly what it gave before it ran in steps (threat-patterns-before.ts, the reference):
// the same patterns, spans, addresses and networks, through detectPatterns and through the window at any step, on
// random windows of IPv4 and IPv6 reports with ties in time, groups just below and above the thresholds, and
// reports joining out of time order.

import { describe, expect, test } from "bun:test";
import { CATEGORIES, type Category } from "../../../src/domain/categories";
import { formatIpv4, type Ip, parseIp } from "../../../src/domain/ip";
import { allAtOnce } from "../../../src/domain/steps";
import { type DetectedPattern, DEFAULT_THREAT_THRESHOLDS, detectPatterns, type ThreatThresholds } from "../../../src/domain/threat-patterns";
import { ThreatWindow, type WindowObservation } from "../../../src/domain/threat-window";
import { rng } from "../../support/random";
import { detectPatternsBefore } from "./threat-patterns-before";

const T0 = Date.parse("2026-11-21T08:00:00.000Z");
const MIN = 60_000;

interface RandomWindow {
  thresholds: ThreatThresholds;
  /** In the order they join the window. */
  reports: WindowObservation[];
  /** Ids taken out after all joined (rejected). */
  removed: Set<number>;
}

/**
 * A random window. Addresses come from a few networks of a few sizes (so a subnet or a campaign holds about as
 * many distinct addresses as its threshold), on a coarse clock (ties) over about twice the span, and join in time
 * order, nearly in time order, or in any order.
 */
function randomWindow(seed: number, size: number): RandomWindow {
  const next = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[next() % xs.length];
  const thresholds: ThreatThresholds = {
    ...DEFAULT_THREAT_THRESHOLDS,
    windowMs: pick([10 * MIN, 30 * MIN, 60 * MIN, 60 * MIN + 1]),
    subnetMinAddresses: 2 + (next() % 6),
    campaignMinAddresses: 3 + (next() % 23),
    ipv4SubnetPrefix: pick([24, 24, 28, 16]),
    ipv6SubnetPrefix: pick([64, 64, 112]),
  };
  const v6Share = pick([0, 0, 0.3, 0.5, 1]);
  // Networks: a few /24s in a few /16s (and far apart), a few /64s in a few /32s; each with a handful of hosts.
  const v4Nets = Array.from({ length: 1 + (next() % 6) }, () => pick([0xcb007100, 0xcb00a000, 0x08080800, 0xd83ac000, 0x0a000000]) + ((next() % 3) << 8));
  const v6Nets = Array.from({ length: 1 + (next() % 5) }, () => `2001:db${pick([8, 8, 9])}:${(next() % 3).toString(16)}:${next() % 2}`);
  const hosts = 1 + (next() % (2 * thresholds.subnetMinAddresses + 2));
  const address = (): Ip =>
    next() % 1000 < v6Share * 1000 ? parseIp(`${pick(v6Nets)}::${(1 + (next() % hosts)).toString(16)}`) : parseIp(formatIpv4(pick(v4Nets) + 1 + (next() % hosts)));
  const asns = [64500, 64501, null];
  const categories: Category[] = [CATEGORIES[0], CATEGORIES[1]];
  const tick = pick([MIN, MIN, 10_000, 1]);
  const spanTicks = Math.max(1, Math.floor((2 * thresholds.windowMs) / tick));
  const reports: WindowObservation[] = [];
  for (let id = 1; id <= size; id++) {
    const ip = address();
    reports.push({ id, ip, category: pick(categories), atMs: T0 + (next() % spanTicks) * tick, asn: pick(asns) });
  }
  const order = pick(["time", "nearly", "any"] as const);
  if (order !== "any") {
    reports.sort((a, b) => a.atMs - b.atMs);
    if (order === "nearly") {
      for (let k = 0; k < size / 10; k++) {
        const i = next() % size;
        const j = Math.min(size - 1, i + 1 + (next() % 5));
        [reports[i], reports[j]] = [reports[j], reports[i]];
      }
    }
  }
  const removed = new Set<number>();
  if (next() % 3 === 0) for (let k = 0; k < size / 8; k++) removed.add(1 + (next() % size));
  return { thresholds, reports, removed };
}

function windowPatterns(w: RandomWindow, step: number): DetectedPattern[] {
  const window = new ThreatWindow(w.thresholds);
  for (const r of w.reports) window.add(r);
  for (const id of w.removed) window.remove(id);
  return allAtOnce(window.takePatternsInSteps(step));
}

/** The patterns of `w` before and after, through detectPatterns and through the window at several steps. */
function expectSameAsBefore(w: RandomWindow, label: object): DetectedPattern[] {
  const left = w.reports.filter((r) => !w.removed.has(r.id));
  const expected = detectPatternsBefore(left, w.thresholds);
  expect({ ...label, patterns: detectPatterns(left, w.thresholds) }).toEqual({ ...label, patterns: expected });
  for (const step of [1, 5, 64, Number.POSITIVE_INFINITY]) expect({ ...label, step, patterns: windowPatterns(w, step) }).toEqual({ ...label, step, patterns: expected });
  return expected;
}

describe("the stepped search finds exactly the patterns the search before it found", () => {
  test("on 400 random windows, each also with both thresholds one higher, through detectPatterns and the window at steps 1, 5, 64 and whole", () => {
    const seen = { bursts: 0, campaigns: 0, v6: 0, nullCategory: 0, nullAsn: 0, none: 0, atThreshold: 0 };
    for (const seed of Array.from({ length: 400 }, (_, i) => i + 1)) {
      const w = randomWindow(seed, 1 + (rng(seed * 7919)() % 400));
      const t = w.thresholds;
      const higher = { ...t, subnetMinAddresses: t.subnetMinAddresses + 1, campaignMinAddresses: t.campaignMinAddresses + 1 };
      for (const thresholds of [t, higher]) {
        const expected = expectSameAsBefore({ ...w, thresholds }, { seed, thresholds });
        for (const p of expected) {
          seen[p.kind === "subnet_burst" ? "bursts" : "campaigns"]++;
          if (p.cidr.includes(":")) seen.v6++;
          if (p.category === null) seen.nullCategory++;
          if (p.asn === null) seen.nullAsn++;
          // Exactly at the threshold: the same group falls just below it with the higher thresholds.
          if (p.addresses.length === (p.kind === "subnet_burst" ? t.subnetMinAddresses : t.campaignMinAddresses)) seen.atThreshold++;
        }
        if (expected.length === 0) seen.none++;
      }
    }
    // Not vacuous: every kind of outcome came up many times.
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(20);
  });

  test.each([11, 12, 14])("seed %p: a window of 20,000 reports (large groups, sorted in many passes)", (seed) => {
    expect(expectSameAsBefore(randomWindow(seed, 20_000), { seed }).length).toBeGreaterThan(3);
  });

  test("a campaign of 20,000 reports on 15,000 addresses over many /16s, IPv4 and IPv6, joining nearly in time order", () => {
    const next = rng(77);
    const reports: WindowObservation[] = [];
    for (let id = 1; id <= 20_000; id++) {
      const host = next() % 15_000;
      const ip = host % 5 === 0 ? parseIp(`2001:db8:${(host % 7).toString(16)}::${host.toString(16)}`) : parseIp(formatIpv4(0x03000000 + ((host * 2654435761) % 0x00300000)));
      reports.push({ id, ip, category: CATEGORIES[0], atMs: T0 + Math.floor((id * 90 * MIN) / 20_000) - (next() % 4 === 0 ? next() % MIN : 0), asn: 16509 });
    }
    const [campaign] = expectSameAsBefore({ thresholds: DEFAULT_THREAT_THRESHOLDS, reports, removed: new Set() }, {}).filter((p) => p.kind === "category_campaign");
    expect(campaign.addresses.length).toBeGreaterThan(8_000);
  });

  test("groups whose reports share a few times, joined in any order: the span is cut where the reference cut it", () => {
    const thresholds = { ...DEFAULT_THREAT_THRESHOLDS, subnetMinAddresses: 3, campaignMinAddresses: 3, windowMs: MIN };
    const next = rng(5);
    const reports: WindowObservation[] = [];
    for (let id = 1; id <= 300; id++) {
      const ip = next() % 2 ? parseIp(formatIpv4(0xcb007100 + (next() % 9))) : parseIp(`2001:db8::${(next() % 9).toString(16)}`);
      reports.push({ id, ip, category: CATEGORIES[next() % 2], atMs: T0 + (next() % 3) * MIN, asn: 64500 + (next() % 2) });
    }
    expect(expectSameAsBefore({ thresholds, reports, removed: new Set() }, {}).length).toBeGreaterThan(3);
  });
});
