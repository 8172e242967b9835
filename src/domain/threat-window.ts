// The reports of the detection window, kept from one `detect-threats` run to the next (contract section 9), so
// a run reads and groups only the reports stored since the last one and looks for patterns only in the groups
// they joined. That finds every new pattern: a pattern appears only when a report joins its group, since the
// window sliding on and rejections only take reports away. Reading and grouping the whole last hour every
// minute took about a second at 200,000 reports an hour.
//
// The reports are kept in columns of typed arrays (a slot each) and grouped by linked lists over the slots
// (slot-groups.ts), not as an object per report in arrays per group: about 160 bytes a report instead of 360, and
// nothing per report for the garbage collector to visit (half a million report objects made every full collection
// of the server's heap walk them). A group's reports are read, a step at a time, only when it has enough for a
// pattern.

import {
  byKindAndKey,
  campaignKeyOf,
  categoryCampaignInSteps,
  type DetectedPattern,
  subnetBurstInSteps,
  ipv4SubnetKeyOf,
  subnetKeyOf,
  type ThreatObservation,
  type ThreatThresholds,
} from "./threat-patterns";
import type { GroupReports } from "./threat-span";
import { SlotGroups } from "./slot-groups";
import { Pace } from "./pace";
import { grownTo } from "./typed-arrays";
import type { Category } from "./categories";
import type { Ip, Ipv6 } from "./ip";

/**
 * Reports the window holds at most (about 160 bytes each, 81 MB). That is 70 minutes of a steady 120
 * reports/s; under more, the oldest reports leave early and a pattern must form within a shorter span to be seen.
 */
export const DEFAULT_WINDOW_REPORTS = 500_000;

/** A counting report in the window: an observation with the report's id. */
export interface WindowObservation extends ThreatObservation {
  readonly id: number;
}

export class ThreatWindow {
  private capacity = 1024;
  /** Slots below this have been used; freed ones are reused first. */
  private top = 0;
  private readonly freeSlots: number[] = [];
  private ids = new Float64Array(this.capacity);
  private atMs = new Float64Array(this.capacity);
  /** The address's ASN, NaN when unknown. */
  private asns = new Float64Array(this.capacity);
  /** The report's category, as its index in `categoryNames`. */
  private categories = new Uint8Array(this.capacity);
  /** An IPv4 address as its number; -1 for IPv6, whose address is in `ipv6`. */
  private ipv4 = new Float64Array(this.capacity);
  private readonly ipv6 = new Map<number, Ip>();
  private readonly categoryNames: Category[] = [];
  private readonly categoryIndex = new Map<Category, number>();
  private readonly byId = new Map<number, number>();
  private readonly subnets = new SlotGroups<number | string>(this.capacity);
  private readonly campaigns = new SlotGroups<string>(this.capacity);
  /** Every slot in use, in the order the reports were added (one group, key 0). */
  private readonly added = new SlotGroups<0>(this.capacity);
  /** The groups reports joined since the last takePatternsInSteps(). */
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
    const slot = this.freeSlot();
    this.byId.set(o.id, slot);
    this.ids[slot] = o.id;
    this.atMs[slot] = o.atMs;
    this.asns[slot] = o.asn ?? Number.NaN;
    this.categories[slot] = this.indexOfCategory(o.category);
    if (o.ip.version === 4) {
      this.ipv4[slot] = o.ip.value;
    } else {
      this.ipv4[slot] = -1;
      this.ipv6.set(slot, o.ip);
    }
    this.added.append(0, slot);
    const subnet = subnetKeyOf(o.ip, this.thresholds);
    this.subnets.append(subnet, slot);
    this.joinedSubnets.add(subnet);
    const campaign = campaignKeyOf(o);
    if (campaign !== null) {
      this.campaigns.append(campaign, slot);
      this.joinedCampaigns.add(campaign);
    }
  }

  /** Takes a report out (it was rejected). */
  remove(id: number): void {
    const slot = this.byId.get(id);
    if (slot !== undefined) this.release(slot);
  }

  // Long work a step at a time: each generator yields after about `step` units of work (mostly a report looked
  // at), so a caller can let the event loop turn (a window of 100,000 reports took a quarter of a second), and
  // returns the result. The window must not change until it is done.

  /** Takes out the reports dated before `start`. */
  *forgetBeforeInSteps(start: number, step: number): Generator<void, void> {
    const count = this.size;
    let slot = this.added.first(0);
    for (let looked = 1; looked <= count; looked++) {
      const next = this.added.following(slot);
      if (this.atMs[slot] < start) this.release(slot);
      slot = next;
      if (looked % step === 0) yield;
    }
  }

  /**
   * Takes out the reports added first until at most `keep` are left, and returns how many went: what holds the
   * window's memory when more reports come in than it can hold (the reports are added in the order the store
   * holds them, so the oldest go first, and the window covers less than its span).
   */
  *forgetOldestInSteps(keep: number, step: number): Generator<void, number> {
    const extra = this.size - keep;
    for (let taken = 1; taken <= extra; taken++) {
      this.release(this.added.first(0));
      if (taken % step === 0) yield;
    }
    return Math.max(extra, 0);
  }

  /**
   * The patterns of the groups reports joined since the last call, sorted by kind, then key. A step is about
   * `step` units of work (a report looked at, or moved once in a sort), however large a group is.
   */
  *takePatternsInSteps(step: number): Generator<void, DetectedPattern[]> {
    const pace = new Pace(step);
    const found: DetectedPattern[] = [];
    // Most groups hold a report or two: counted without a list, and only one large enough for a pattern is read.
    const { subnetMinAddresses, campaignMinAddresses } = this.thresholds;
    for (const key of this.joinedSubnets) {
      const small = this.subnets.sizeOf(key, subnetMinAddresses);
      if (pace.spend(small + 1)) yield;
      if (small < subnetMinAddresses) continue;
      const group = this.reportsAt(yield* this.slotsInSteps(this.subnets, key, pace));
      const burst = yield* subnetBurstInSteps(group, this.thresholds, pace);
      if (burst) found.push(burst);
    }
    for (const key of this.joinedCampaigns) {
      const small = this.campaigns.sizeOf(key, campaignMinAddresses);
      if (pace.spend(small + 1)) yield;
      if (small < campaignMinAddresses) continue;
      const group = this.reportsAt(yield* this.slotsInSteps(this.campaigns, key, pace));
      const campaign = yield* categoryCampaignInSteps(key, group, this.thresholds, pace);
      if (campaign) found.push(campaign);
    }
    this.joinedSubnets.clear();
    this.joinedCampaigns.clear();
    return found.sort(byKindAndKey);
  }

  /** The slots of a group (not empty) in the order they joined. */
  private *slotsInSteps<K>(groups: SlotGroups<K>, key: K, pace: Pace): Generator<void, Int32Array> {
    const first = groups.first(key);
    let size = 0;
    let slot = first;
    do {
      size++;
      slot = groups.following(slot);
      if (pace.spend()) yield;
    } while (slot !== first);
    const slots = new Int32Array(size);
    for (let i = 0; i < size; i++) {
      slots[i] = slot;
      slot = groups.following(slot);
      if (pace.spend()) yield;
    }
    return slots;
  }

  /** The reports in `slots`, read from the columns, as detection reads a group. */
  private reportsAt(slots: Int32Array): GroupReports {
    return {
      size: slots.length,
      atMs: (p) => this.atMs[slots[p]],
      ipv4: (p) => this.ipv4[slots[p]],
      ipv6: (p) => this.ipv6.get(slots[p]) as Ipv6,
      category: (p) => this.categoryNames[this.categories[slots[p]]],
      asn: (p) => {
        const asn = this.asns[slots[p]];
        return Number.isNaN(asn) ? null : asn;
      },
    };
  }

  /** Takes the report in `slot` out of its groups and the window, and frees the slot. */
  private release(slot: number): void {
    this.byId.delete(this.ids[slot]);
    this.added.remove(0, slot);
    this.subnets.remove(this.subnetKeyAt(slot), slot);
    const asn = this.asns[slot];
    if (!Number.isNaN(asn)) this.campaigns.remove(campaignKeyOf({ asn, category: this.categoryNames[this.categories[slot]] }) as string, slot);
    this.ipv6.delete(slot);
    this.freeSlots.push(slot);
  }

  private subnetKeyAt(slot: number): number | string {
    const v4 = this.ipv4[slot];
    return v4 >= 0 ? ipv4SubnetKeyOf(v4, this.thresholds) : subnetKeyOf(this.ipv6.get(slot) as Ip, this.thresholds);
  }

  private freeSlot(): number {
    const reused = this.freeSlots.pop();
    if (reused !== undefined) return reused;
    if (this.top === this.capacity) this.grow(this.capacity * 2);
    return this.top++;
  }

  private grow(capacity: number): void {
    this.ids = grownTo(this.ids, capacity);
    this.atMs = grownTo(this.atMs, capacity);
    this.asns = grownTo(this.asns, capacity);
    this.ipv4 = grownTo(this.ipv4, capacity);
    this.categories = grownTo(this.categories, capacity);
    this.subnets.grow(capacity);
    this.campaigns.grow(capacity);
    this.added.grow(capacity);
    this.capacity = capacity;
  }

  private indexOfCategory(category: Category): number {
    let index = this.categoryIndex.get(category);
    if (index === undefined) {
      index = this.categoryNames.length;
      if (index > 255) throw new RangeError("more than 256 categories in the detection window");
      this.categoryNames.push(category);
      this.categoryIndex.set(category, index);
    }
    return index;
  }
}
