// The reports of the detection window, kept from one `detect-threats` run to the next (contract section 9), so
// a run reads and groups only the reports stored since the last one and looks for patterns only in the groups
// they joined. That finds every new pattern: a pattern appears only when a report joins its group, since the
// window sliding on and rejections only take reports away. Reading and grouping the whole last hour every
// minute took about a second at 200,000 reports an hour.

import {
  byKindAndKey,
  campaignKeyOf,
  categoryCampaign,
  type DetectedPattern,
  subnetBurst,
  subnetKeyOf,
  type ThreatObservation,
  type ThreatThresholds,
} from "./threat-patterns";
import { allAtOnce } from "./steps";

/**
 * Reports the window holds at most (about 360 bytes of heap each, 160-200 MB). That is 70 minutes of a steady 120
 * reports/s; under more, the oldest reports leave early and a pattern must form within a shorter span to be seen.
 */
export const DEFAULT_WINDOW_REPORTS = 500_000;

/** A counting report in the window: an observation with the report's id. */
export interface WindowObservation extends ThreatObservation {
  readonly id: number;
}

export class ThreatWindow {
  private readonly byId = new Map<number, WindowObservation>();
  private readonly subnets = new Map<number | string, WindowObservation[]>();
  private readonly campaigns = new Map<string, WindowObservation[]>();
  /** The groups reports joined since the last takePatterns(). */
  private readonly joinedSubnets = new Set<number | string>();
  private readonly joinedCampaigns = new Set<string>();

  constructor(private readonly thresholds: ThreatThresholds) {}

  /** Reports in the window. */
  get size(): number {
    return this.byId.size;
  }

  /** Adds a report (once: a report already in the window is left as it is). */
  add(o: WindowObservation): void {
    if (this.byId.has(o.id)) return;
    this.byId.set(o.id, o);
    const subnet = subnetKeyOf(o.ip, this.thresholds);
    join(this.subnets, subnet, o);
    this.joinedSubnets.add(subnet);
    const campaign = campaignKeyOf(o);
    if (campaign !== null) {
      join(this.campaigns, campaign, o);
      this.joinedCampaigns.add(campaign);
    }
  }

  /** Takes a report out (it was rejected). */
  remove(id: number): void {
    const o = this.byId.get(id);
    if (o === undefined) return;
    this.byId.delete(id);
    leave(this.subnets, subnetKeyOf(o.ip, this.thresholds), (x) => x !== o);
    const campaign = campaignKeyOf(o);
    if (campaign !== null) leave(this.campaigns, campaign, (x) => x !== o);
  }

  /** Takes out the reports dated before `start`. */
  forgetBefore(start: number): void {
    allAtOnce(this.forgetBeforeInSteps(start, Number.POSITIVE_INFINITY));
  }

  /** The patterns of the groups reports joined since the last call, sorted by kind, then key. */
  takePatterns(): DetectedPattern[] {
    return allAtOnce(this.takePatternsInSteps(Number.POSITIVE_INFINITY));
  }

  // The same, a step at a time: each generator yields after looking at about `step` reports, so a caller can let
  // the event loop turn (a window of 100,000 reports took a quarter of a second), and returns the result. The
  // window must not change until it is done.

  *forgetBeforeInSteps(start: number, step: number): Generator<void, void> {
    yield* this.keepInSteps((o) => o.atMs >= start, step);
  }

  /**
   * Takes out the reports added first until at most `keep` are left, and returns how many went: what holds the
   * window's memory when more reports come in than it can hold (the reports are added in the order the store
   * holds them, so the oldest go first, and the window covers less than its span).
   */
  *forgetOldestInSteps(keep: number, step: number): Generator<void, number> {
    const extra = this.byId.size - keep;
    if (extra <= 0) return 0;
    // Only the groups of the reports that leave are filtered, not the whole window: a pass under a flood cuts the
    // window many times.
    const subnets = new Set<number | string>();
    const campaigns = new Set<string>();
    let taken = 0;
    for (const [id, o] of this.byId) {
      if (taken === extra) break;
      this.byId.delete(id);
      subnets.add(subnetKeyOf(o.ip, this.thresholds));
      const campaign = campaignKeyOf(o);
      if (campaign !== null) campaigns.add(campaign);
      if (++taken % step === 0) yield;
    }
    const stays = (o: WindowObservation) => this.byId.has(o.id);
    let looked = 0;
    for (const key of subnets) {
      if ((looked += this.subnets.get(key)?.length ?? 1) >= step) (looked = 0), yield;
      leave(this.subnets, key, stays);
    }
    for (const key of campaigns) {
      if ((looked += this.campaigns.get(key)?.length ?? 1) >= step) (looked = 0), yield;
      leave(this.campaigns, key, stays);
    }
    return extra;
  }

  /** Keeps the reports that pass `stays` (one that does not leaves its groups and byId), sweeping every group. */
  private *keepInSteps(stays: (o: WindowObservation) => boolean, step: number): Generator<void, void> {
    let looked = 0;
    for (const [key, group] of this.subnets) {
      if ((looked += group.length) >= step) (looked = 0), yield;
      if (group.every(stays)) continue;
      for (const o of group) if (!stays(o)) this.byId.delete(o.id);
      leave(this.subnets, key, stays);
    }
    for (const [key, group] of this.campaigns) {
      if ((looked += group.length) >= step) (looked = 0), yield;
      if (!group.every(stays)) leave(this.campaigns, key, stays);
    }
  }

  *takePatternsInSteps(step: number): Generator<void, DetectedPattern[]> {
    const found: DetectedPattern[] = [];
    let looked = 0;
    for (const key of this.joinedSubnets) {
      const group = this.subnets.get(key);
      if ((looked += group?.length ?? 1) >= step) (looked = 0), yield;
      const burst = group === undefined ? null : subnetBurst(group, this.thresholds);
      if (burst) found.push(burst);
    }
    for (const key of this.joinedCampaigns) {
      const group = this.campaigns.get(key);
      if ((looked += group?.length ?? 1) >= step) (looked = 0), yield;
      const campaign = group === undefined ? null : categoryCampaign(key, group, this.thresholds);
      if (campaign) found.push(campaign);
    }
    this.joinedSubnets.clear();
    this.joinedCampaigns.clear();
    return found.sort(byKindAndKey);
  }
}


function join<K>(groups: Map<K, WindowObservation[]>, key: K, o: WindowObservation): void {
  const group = groups.get(key);
  if (group) group.push(o);
  else groups.set(key, [o]);
}

/** Keeps the group's reports that pass `keep`; a group left empty is dropped. */
function leave<K>(groups: Map<K, WindowObservation[]>, key: K, keep: (o: WindowObservation) => boolean): void {
  const kept = groups.get(key)?.filter(keep) ?? [];
  if (kept.length === 0) groups.delete(key);
  else groups.set(key, kept);
}
