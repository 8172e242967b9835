// One bouncer filter's decision list as a journal (contract 14): the list now, the sequence number each entry
// entered at, and the changes in the store (store/decision-journal.ts), so that a pull costs what changed since
// its cursor and entries due to be sent again are found by the sequence numbers they entered at, not by a scan.
// The list is computed again only when the index or the allowlist changed, once for every bouncer of the filter.

import { MAX_DECISION_DURATION_SECONDS } from "../../domain/decisions";
import { grownTo, sortedIndexOf } from "../../domain/typed-arrays";
import type { DecisionChange, DecisionJournalTables, JournalCheckpoint } from "../../store/decision-journal";
import type { Ip } from "../../domain/ip";
import type { AddressDecision, DecisionList } from "./decision-list";
import { Pace } from "../../domain/pace";
import { allAtOnce } from "../../domain/steps";
import { sortedInSteps } from "../../domain/sorted-in-steps";

/** Changes are kept this long (the longest duration and a day, as idle cursors): a removal log for dropped cursors. */
export const JOURNAL_KEEP_MS = (MAX_DECISION_DURATION_SECONDS + 24 * 3600) * 1000;
/** A new checkpoint once the changes since the last one are this many, or a quarter of the list if more. */
const CHECKPOINT_MIN_CHANGES = 4096;
const PRUNE_EVERY_MS = 3600 * 1000;
/** More addresses changed than this between two pulls: the list is computed whole again. */
const MAX_PENDING = 65_536;

/** Work done by pulls, counted for tests: entries looked at one by one. */
export interface PullWork {
  entriesVisited: number;
}

export class FilterJournal {
  /** The newest sequence number: the list's. */
  seq = 0;
  /** Cursors older than this cannot be brought up to date from the changes kept. */
  prunedSeq = 0;
  list: DecisionList = { ids: new Float64Array(0), v6: new Map() };
  /** The sequence number each of list.ids entered at. */
  private entered: Uint32Array = new Uint32Array(0);
  /** The listed ids in the order they entered (sequence numbers ascending); entries that left since are skipped. */
  private orderIds = new Float64Array(0);
  private orderSeqs = new Uint32Array(0);
  private orderLength = 0;
  private checkpointSeq = 0;
  private changesSinceCheckpoint = 0;
  /** The index generation and allowlist change count the list was last computed at (-1: never). */
  private syncedGeneration = -1;
  private syncedAllowlist = -1;
  private lastPruneAt = Number.NEGATIVE_INFINITY;
  /** Addresses changed since the last sync, when every change since was one address's; null: the list must be computed whole. */
  private pending: Ip[] | null = [];
  /** A sync in steps is under way: another must not start before it ended. */
  private syncing = false;

  constructor(
    readonly filterKey: string,
    private readonly tables: DecisionJournalTables,
    private readonly compute: () => DecisionList,
    /** One changed address's decision now (null: only the whole list can tell). */
    private readonly decisionOf: (ip: Ip) => AddressDecision | null = () => null,
  ) {}

  /** Hears a change of the index: an address, or null for anything wider (a network, the allowlist). */
  noteChange(ip: Ip | null): void {
    if (this.pending === null) return;
    if (ip === null || this.pending.length >= MAX_PENDING) this.pending = null;
    else this.pending.push(ip);
  }

  /**
   * Whether `sync` at this state would compute the list whole (the first sync, or a change wider than addresses: a
   * listed network, the allowlist, too many addresses): the caller may compute it in steps and hand it to `sync`.
   */
  needsWholeList(generation: number, allowlistChanges: number): boolean {
    if (generation === this.syncedGeneration && allowlistChanges === this.syncedAllowlist) return false;
    return !this.followsAddresses(generation, allowlistChanges);
  }

  /** Only addresses changed since the last sync, each one generation step: the list is updated from them alone. */
  private followsAddresses(generation: number, allowlistChanges: number, pending = this.pending): boolean {
    return this.syncedGeneration !== -1 && pending !== null && allowlistChanges === this.syncedAllowlist && generation - this.syncedGeneration === pending.length;
  }

  /**
   * Brings the journal up to the list as it is now, computed again only when the index or the allowlist changed.
   * `computed`: the whole list at this very state (generation and allowlist), computed by the caller in steps.
   */
  sync(generation: number, allowlistChanges: number, nowMs: number, computed: DecisionList | null = null): void {
    allAtOnce(this.syncInSteps(generation, allowlistChanges, nowMs, computed, new Pace(Infinity)));
  }

  /**
   * `sync` a step at a time: the journal read from the store (the first time), compared with the list now, and its
   * order rebuilt, each id a unit of work on `pace`; the store is read and written at once. Changes of the index
   * during the steps are noted for the next sync, as between two syncs. One at a time (the caller waits for the
   * one under way).
   */
  *syncInSteps(generation: number, allowlistChanges: number, nowMs: number, computed: DecisionList | null, pace: Pace): Generator<void, void> {
    if (generation === this.syncedGeneration && allowlistChanges === this.syncedAllowlist) return;
    if (this.syncing) throw new Error(`the decision journal of ${this.filterKey} is being synced already`);
    this.syncing = true;
    const pending = this.pending;
    this.pending = [];
    try {
      const fromAddresses = this.followsAddresses(generation, allowlistChanges, pending);
      const whole = () => computed ?? this.compute();
      // The first time, the journal the store holds (if any) is what the list now is compared with.
      const held = this.syncedGeneration !== -1 || (yield* this.load(nowMs, whole, pace));
      if (fromAddresses) this.recordAddresses(pending!, nowMs);
      else if (held) yield* this.record(whole(), nowMs, pace);
      this.syncedGeneration = generation;
      this.syncedAllowlist = allowlistChanges;
      if (nowMs - this.lastPruneAt >= PRUNE_EVERY_MS) this.prune(nowMs);
    } catch (error) {
      this.pending = null; // what changed meanwhile is not known: the next sync computes the list whole
      throw error;
    } finally {
      this.syncing = false;
    }
  }

  /** Drops the changes older than 620 h, after a checkpoint that holds them when the last one does not. */
  private prune(nowMs: number): void {
    this.lastPruneAt = nowMs;
    const before = nowMs - JOURNAL_KEEP_MS;
    if (this.tables.newestBefore(this.filterKey, before) > this.checkpointSeq) {
      this.tables.writeCheckpoint(this.filterKey, this.checkpointNow());
      this.checkpointSeq = this.seq;
      this.changesSinceCheckpoint = 0;
    }
    this.prunedSeq = Math.max(this.prunedSeq, this.tables.prune(this.filterKey, before, this.checkpointSeq));
  }

  /** The journal as the store holds it (true); false when there was none: it starts from the list now, at seq 1. */
  private *load(nowMs: number, whole: () => DecisionList, pace: Pace): Generator<void, boolean> {
    const c = this.tables.checkpoint(this.filterKey);
    if (c === null) {
      this.list = whole();
      this.seq = 1;
      this.checkpointSeq = 1;
      this.entered = new Uint32Array(this.list.ids.length).fill(1);
      this.tables.writeCheckpoint(this.filterKey, this.checkpointNow());
      yield* this.buildOrder(pace);
      this.lastPruneAt = nowMs;
      return false;
    }
    const changes = this.tables.changesSince(this.filterKey, c.checkpointSeq);
    const last = new Map<number, DecisionChange>();
    for (const change of changes) last.set(change.id, change);
    const v6 = new Map<number, { value: string; scope: "Ip" | "Range" }>();
    const entering = [...last.values()].filter((ch) => ch.entered).sort((a, b) => a.id - b.id);
    const ids = new Float64Array(c.ids.length + entering.length);
    const entered = new Uint32Array(ids.length);
    let n = 0;
    let k = 0;
    const take = (id: number, seq: number, value: string | undefined | null) => {
      ids[n] = id;
      entered[n++] = seq;
      if (value) v6.set(id, { value, scope: value.includes("/") ? "Range" : "Ip" });
    };
    for (let i = 0; i < c.ids.length; i++) {
      const id = c.ids[i];
      while (k < entering.length && entering[k].id < id) take(entering[k].id, entering[k].seq, entering[k++].v6Value);
      if (pace.spend()) yield;
      if (last.size > 0 && last.has(id)) continue;
      take(id, c.entered[i], c.v6Values[id]);
    }
    while (k < entering.length) take(entering[k].id, entering[k].seq, entering[k++].v6Value);
    this.list = { ids: n === ids.length ? ids : ids.slice(0, n), v6 };
    this.entered = n === entered.length ? entered : entered.slice(0, n);
    this.seq = c.seq;
    this.prunedSeq = c.prunedSeq;
    this.checkpointSeq = c.checkpointSeq;
    this.changesSinceCheckpoint = changes.length;
    yield* this.buildOrder(pace);
    return true;
  }

  /** Commits the difference between the list held and `next` as one sequence number (none when they are the same). */
  private *record(next: DecisionList, nowMs: number, pace: Pace = new Pace(Infinity)): Generator<void, void> {
    const a = this.list.ids;
    const b = next.ids;
    const seq = this.seq + 1;
    const entered = new Uint32Array(b.length);
    const added: number[] = [];
    const removed: number[] = [];
    let i = 0;
    for (let j = 0; j < b.length; j++) {
      if (pace.spend()) yield;
      const id = b[j];
      while (i < a.length && a[i] < id) removed.push(a[i++]);
      if (i < a.length && a[i] === id) {
        entered[j] = this.entered[i++];
      } else {
        entered[j] = seq;
        added.push(id);
      }
    }
    while (i < a.length) removed.push(a[i++]);
    if (added.length === 0 && removed.length === 0) {
      this.list = next;
      return;
    }
    this.commit(next, entered, added, removed, nowMs);
  }

  /** The list updated from the decisions of the addresses that changed (at most MAX_PENDING of them). */
  private recordAddresses(changed: Ip[], nowMs: number): void {
    const enter = new Map<number, { value: string; scope: "Ip" | "Range" } | null>();
    const leave = new Set<number>();
    for (const ip of changed) {
      const d = this.decisionOf(ip);
      if (d === null) return allAtOnce(this.record(this.compute(), nowMs));
      const listed = this.indexOf(d.id) >= 0;
      enter.delete(d.id);
      leave.delete(d.id);
      if (d.listed && !listed) enter.set(d.id, d.v6);
      else if (!d.listed && listed) leave.add(d.id);
    }
    if (enter.size === 0 && leave.size === 0) return;
    const seq = this.seq + 1;
    const added = Float64Array.from(enter.keys()).sort();
    const removed = Float64Array.from(leave).sort();
    const a = this.list.ids;
    const ids = new Float64Array(a.length + added.length - removed.length);
    const entered = new Uint32Array(ids.length);
    let i = 0;
    let k = 0;
    let r = 0;
    let o = 0;
    while (i < a.length || k < added.length) {
      if (k < added.length && (i >= a.length || added[k] < a[i])) {
        ids[o] = added[k++];
        entered[o++] = seq;
      } else {
        if (r < removed.length && removed[r] === a[i]) {
          r++;
          i++;
          continue;
        }
        ids[o] = a[i];
        entered[o++] = this.entered[i++];
      }
    }
    const v6 = new Map(this.list.v6);
    for (const [id, value] of enter) if (value !== null) v6.set(id, value);
    const next = { ids, v6 };
    this.commit(next, entered, Array.from(added), Array.from(removed), nowMs, (id) => this.list.v6.get(id)?.value ?? null);
    for (const id of removed) v6.delete(id);
  }

  /** Commits `next` (with the sequence number each entry entered at) as the list's next sequence number. */
  private commit(next: DecisionList, entered: Uint32Array, added: number[], removed: number[], nowMs: number, leftValue?: (id: number) => string | null): void {
    const b = next.ids;
    const seq = this.seq + 1;
    const before = this.list;
    const v6Value = (id: number) => next.v6.get(id)?.value ?? leftValue?.(id) ?? before.v6.get(id)?.value ?? null;
    const changes = this.changesSinceCheckpoint + added.length + removed.length;
    const checkpoint = changes > Math.max(CHECKPOINT_MIN_CHANGES, b.length / 4);
    const held = { list: next, entered, seq };
    this.tables.append(this.filterKey, seq, nowMs, added, removed, v6Value, checkpoint ? this.checkpointNow(held) : null);
    this.list = next;
    this.entered = entered;
    this.seq = seq;
    if (checkpoint) {
      this.checkpointSeq = seq;
      this.changesSinceCheckpoint = 0;
    } else {
      this.changesSinceCheckpoint = changes;
    }
    if (this.orderLength + added.length > 2 * b.length + 4096) {
      allAtOnce(this.buildOrder(new Pace(Infinity)));
    } else {
      for (const id of added) this.pushOrder(id, seq);
    }
  }

  private checkpointNow(held: { list: DecisionList; entered: Uint32Array; seq: number } = { list: this.list, entered: this.entered, seq: this.seq }): JournalCheckpoint {
    const v6Values: Record<string, string> = {};
    for (const [id, v] of held.list.v6) v6Values[id] = v.value;
    return { seq: held.seq, checkpointSeq: held.seq, prunedSeq: this.prunedSeq, ids: held.list.ids, entered: held.entered, v6Values };
  }

  /** The listed ids in the order they entered (ties in id order), rebuilt from the list a step at a time. */
  private *buildOrder(pace: Pace): Generator<void, void> {
    const { ids } = this.list;
    const entered = this.entered;
    this.orderLength = 0;
    this.orderIds = new Float64Array(ids.length + 1024);
    this.orderSeqs = new Uint32Array(ids.length + 1024);
    // In id order already when everything entered together (a new journal): the merge sort sees it in one pass.
    const positions = yield* sortedInSteps(ids.length, (x, y) => entered[x] < entered[y], pace);
    for (let k = 0; k < positions.length; k++) {
      const p = positions[k];
      this.orderIds[k] = ids[p];
      this.orderSeqs[k] = entered[p];
      if (pace.spend()) yield;
    }
    this.orderLength = ids.length;
  }

  private pushOrder(id: number, seq: number): void {
    if (this.orderLength === this.orderIds.length) {
      const capacity = Math.ceil(this.orderIds.length * 1.5) + 1024;
      this.orderIds = grownTo(this.orderIds, capacity);
      this.orderSeqs = grownTo(this.orderSeqs, capacity);
    }
    this.orderIds[this.orderLength] = id;
    this.orderSeqs[this.orderLength++] = seq;
  }

  /** Calls `visit` with each id listed now that entered in (fromSeq, toSeq]. */
  eachEnteredIn(fromSeq: number, toSeq: number, visit: (id: number) => void, work: PullWork): void {
    let lo = 0;
    let hi = this.orderLength;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.orderSeqs[mid] <= fromSeq) lo = mid + 1;
      else hi = mid;
    }
    for (let k = lo; k < this.orderLength && this.orderSeqs[k] <= toSeq; k++) {
      work.entriesVisited++;
      const id = this.orderIds[k];
      const at = this.indexOf(id);
      if (at >= 0 && this.entered[at] === this.orderSeqs[k]) visit(id);
    }
  }

  /** Every change after `seq`, oldest first (none read when the cursor is at the newest). */
  changesSince(seq: number): DecisionChange[] {
    return seq >= this.seq ? [] : this.tables.changesSince(this.filterKey, seq);
  }

  /** The ids that left after `sinceMs` and are not listed now, with IPv6 values. */
  removedSince(sinceMs: number): { id: number; v6Value: string | null }[] {
    return this.tables.removedSince(this.filterKey, sinceMs).filter((r) => !this.isListed(r.id));
  }

  isListed(id: number): boolean {
    return this.indexOf(id) >= 0;
  }

  private indexOf(id: number): number {
    return sortedIndexOf(this.list.ids, id);
  }
}
