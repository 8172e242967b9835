// The pattern search of one group runs in bounded steps, counted without a clock: between two yields it reads at
// most about `step` of the group's reports, however large the group (the sorts are checked the same way in
// sorted-in-steps.test.ts). Its results are checked against the search before steps in
// threat-detection-differential.test.ts.

import { expect, test } from "bun:test";
import { CATEGORIES } from "../../../src/domain/categories";
import { formatIpv4, type Ipv6, parseIp } from "../../../src/domain/ip";
import { Pace } from "../../../src/domain/pace";
import { categoryCampaignInSteps, DEFAULT_THREAT_THRESHOLDS, type DetectedPattern, subnetBurstInSteps, type ThreatObservation } from "../../../src/domain/threat-patterns";
import type { GroupReports } from "../../../src/domain/threat-span";
import { rng } from "../../support/random";

const T0 = Date.parse("2026-11-21T08:00:00.000Z");
const MIN = 60_000;

/** A group over `observations` that notes every position read. */
function watched(observations: readonly ThreatObservation[], read: Set<number>): GroupReports {
  const at = (p: number) => (read.add(p), observations[p]);
  return {
    size: observations.length,
    atMs: (p) => at(p).atMs,
    ipv4: (p) => {
      const ip = at(p).ip;
      return ip.version === 4 ? ip.value : -1;
    },
    ipv6: (p) => at(p).ip as Ipv6,
    category: (p) => at(p).category,
    asn: (p) => at(p).asn,
  };
}

/** Runs `steps` to its end; returns its result and the most positions read between two yields. */
function mostReadPerStep(steps: Generator<void, DetectedPattern | null>, read: Set<number>): { pattern: DetectedPattern | null; most: number; yields: number } {
  let most = 0;
  let yields = 0;
  for (;;) {
    read.clear();
    const next = steps.next();
    most = Math.max(most, read.size);
    if (next.done) return { pattern: next.value, most, yields };
    yields++;
  }
}

/** `n` reports of one /24 or one /64 and one ASN, over 90 minutes, joining in random time order. */
function largeGroup(n: number, v6: boolean): ThreatObservation[] {
  const next = rng(n);
  return Array.from({ length: n }, () => {
    const host = 1 + (next() % 250);
    const ip = v6 && next() % 2 ? parseIp(`2001:db8::${host.toString(16)}`) : parseIp(formatIpv4(0xcb007100 + host));
    return { ip, category: CATEGORIES[next() % 2], atMs: T0 + (next() % (90 * MIN)), asn: 64500 };
  });
}

test.each([
  ["subnet burst", 1],
  ["subnet burst", 50],
  ["subnet burst", 1_000],
  ["campaign", 1],
  ["campaign", 50],
  ["campaign", 1_000],
] as const)("%s of 30,000 reports, step %p: at most step + 2 reports read between two yields", (kind, step) => {
  // IPv4 for the burst (a /24), IPv4 and IPv6 for the campaign.
  const group = largeGroup(30_000, kind === "campaign");
  const read = new Set<number>();
  const pace = new Pace(step);
  const steps =
    kind === "campaign"
      ? categoryCampaignInSteps("AS64500:SSH", watched(group, read), DEFAULT_THREAT_THRESHOLDS, pace)
      : subnetBurstInSteps(watched(group, read), DEFAULT_THREAT_THRESHOLDS, pace);
  const { pattern, most, yields } = mostReadPerStep(steps, read);
  expect(pattern?.addresses.length).toBeGreaterThan(200);
  // The group's first report is read beside a step's work (it names the pattern), and so is the span's first.
  expect(most).toBeLessThanOrEqual(step + 2);
  // Every report is read, sorted twice (by time and address) and swept: many steps.
  expect(yields).toBeGreaterThan((4 * group.length) / step);
});
