// The detection window's stepped forms (forgetBeforeInSteps, takePatternsInSteps) give what they give run whole
// (one step as large as the window), at any step, and yield while they work, so a detection pass can let the
// event loop turn.

import { expect, test } from "bun:test";
import { CATEGORIES } from "../../../src/domain/categories";
import { formatIpv4, parseIp } from "../../../src/domain/ip";
import { allAtOnce } from "../../../src/domain/steps";
import { type DetectedPattern, DEFAULT_THREAT_THRESHOLDS, detectPatterns } from "../../../src/domain/threat-patterns";
import { ThreatWindow, type WindowObservation } from "../../../src/domain/threat-window";
import { rng } from "../../support/random";

const T0 = Date.parse("2026-11-21T08:00:00.000Z");
const MIN = 60_000;

/** A window of `n` reports over a few /24s and ASNs (so bursts and campaigns both appear) across 90 minutes. */
function windowOf(n: number, seed: number): ThreatWindow {
  const next = rng(seed);
  const w = new ThreatWindow(DEFAULT_THREAT_THRESHOLDS);
  for (let id = 1; id <= n; id++) {
    const ip = parseIp(formatIpv4(0xcb007100 + ((next() % 40) << 8) + (next() % 12)));
    w.add({ id, ip, category: CATEGORIES[next() % 3], atMs: T0 + (next() % 90) * MIN, asn: 64500 + (next() % 4) });
  }
  return w;
}

/** The window's reports dated before `start` taken out, at once. */
const forgetBefore = (w: ThreatWindow, start: number): void => allAtOnce(w.forgetBeforeInSteps(start, Number.POSITIVE_INFINITY));
/** The window's new patterns, at once. */
const takePatterns = (w: ThreatWindow): DetectedPattern[] => allAtOnce(w.takePatternsInSteps(Number.POSITIVE_INFINITY));

function run<T>(steps: Generator<void, T>): { value: T; yields: number } {
  let yields = 0;
  for (;;) {
    const next = steps.next();
    if (next.done) return { value: next.value, yields };
    yields++;
  }
}

test.each([1, 7, 100, 100_000])("step %p: the same window left and the same patterns as the whole forms", (step) => {
  const whole = windowOf(3_000, 5);
  const stepped = windowOf(3_000, 5);
  forgetBefore(whole, T0 + 30 * MIN);
  const forgot = run(stepped.forgetBeforeInSteps(T0 + 30 * MIN, step));
  expect(stepped.size).toBe(whole.size);
  const patterns = run(stepped.takePatternsInSteps(step));
  expect(patterns.value).toEqual(takePatterns(whole));
  expect(patterns.value.length).toBeGreaterThan(0);
  // A small step yields while it works; a step larger than the window does not.
  if (step <= 100) expect(Math.min(forgot.yields, patterns.yields)).toBeGreaterThan(0);
  else expect(forgot.yields + patterns.yields).toBe(0);
  // Taken: the next call has no joined group to look at.
  expect(takePatterns(stepped)).toEqual([]);
});

test.each([1, 7, 100_000])("step %p: forgetOldestInSteps keeps the reports added last, as a window of only those would hold them", (step) => {
  const cut = windowOf(3_000, 9);
  const forgot = run(cut.forgetOldestInSteps(1_000, step));
  expect(forgot.value).toBe(2_000);
  expect(cut.size).toBe(1_000);
  if (step <= 100) expect(forgot.yields).toBeGreaterThan(0);
  // The same reports (same seed), only the last 1,000 added: the groups and so the patterns are the same.
  const next = rng(9);
  const last = new ThreatWindow(DEFAULT_THREAT_THRESHOLDS);
  for (let id = 1; id <= 3_000; id++) {
    const ip = parseIp(formatIpv4(0xcb007100 + ((next() % 40) << 8) + (next() % 12)));
    const o = { id, ip, category: CATEGORIES[next() % 3], atMs: T0 + (next() % 90) * MIN, asn: 64500 + (next() % 4) };
    if (id > 2_000) last.add(o);
  }
  const patterns = takePatterns(cut);
  expect(patterns).toEqual(takePatterns(last));
  expect(patterns.length).toBeGreaterThan(0);
  // Within its limit nothing leaves.
  expect(run(cut.forgetOldestInSteps(1_000, step)).value).toBe(0);
  expect(cut.size).toBe(1_000);
});

test.each([3, 11, 29])("seed %p: after removals and a forgetBefore, the window's patterns are detectPatterns' over the reports left", (seed) => {
  const next = rng(seed);
  const w = new ThreatWindow(DEFAULT_THREAT_THRESHOLDS);
  const all: WindowObservation[] = [];
  for (let id = 1; id <= 4_000; id++) {
    const v4 = next() % 5 !== 0;
    const ip = v4 ? parseIp(formatIpv4(0xcb007100 + ((next() % 40) << 8) + (next() % 12))) : parseIp(`2001:db8:${next() % 6}::${(next() % 30).toString(16)}`);
    const o = { id, ip, category: CATEGORIES[next() % 3], atMs: T0 + (next() % 90) * MIN, asn: next() % 7 === 0 ? null : 64500 + (next() % 4) };
    all.push(o);
    w.add(o);
  }
  const removed = new Set<number>();
  for (let k = 0; k < 600; k++) removed.add(1 + (next() % 4_000));
  for (const id of removed) w.remove(id);
  forgetBefore(w, T0 + 25 * MIN);
  const left = all.filter((o) => !removed.has(o.id) && o.atMs >= T0 + 25 * MIN);
  expect(w.size).toBe(left.length);
  const patterns = takePatterns(w);
  expect(patterns).toEqual(detectPatterns(left, DEFAULT_THREAT_THRESHOLDS));
  expect(patterns.filter((p) => p.kind === "subnet_burst").length).toBeGreaterThan(0);
  expect(patterns.filter((p) => p.kind === "category_campaign").length).toBeGreaterThan(0);
  expect(patterns.some((p) => p.cidr.includes(":"))).toBe(true);
});

test("one group of 20,000 reports is searched in many steps, not read in one", () => {
  const w = new ThreatWindow(DEFAULT_THREAT_THRESHOLDS);
  for (let id = 1; id <= 20_000; id++) w.add({ id, ip: parseIp(formatIpv4(0xcb007100 + (id % 200))), category: CATEGORIES[0], atMs: T0 + id * 100, asn: null });
  const { value, yields } = run(w.takePatternsInSteps(100));
  expect(value.map((p) => [p.cidr, p.addresses.length])).toEqual([["203.0.113.0/24", 200]]);
  // Its slots listed, its reports read, its addresses sorted, and swept: every report is handled a few times.
  expect(yields).toBeGreaterThan((4 * 20_000) / 100);
});
