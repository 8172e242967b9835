// The in-memory reputation index: every reported address with its score, risk, categories, counts and dates,
// kept in slot-indexed typed-array columns and found through the IPv4/IPv6 radix trees (the tree's value is
// the slot). Lookups, bulk checks and blocklists read it and never run SQL per address. The store is the truth;
// this is read at start from the index file when that matches the store (index-file.ts), else rebuilt from the
// `addresses` table, and updated after every committed change.

import type { Cidr, Ip, Ipv6 } from "../domain/ip";
import { grownTo } from "../domain/typed-arrays";
import { riskCodeOfScore, type RiskThresholds, DEFAULT_RISK_THRESHOLDS } from "../domain/risk";
import { NetworkIntervals4 } from "./network-intervals";
import { NOT_FOUND } from "./radix-common";
import { RadixTree4 } from "./radix4";
import { RadixTree6 } from "./radix6";
import { SlotAddresses } from "./slot-addresses";

/** What the index keeps of one address: the `addresses` row in typed form. */
export interface AddressRecord {
  reputationScore: number;
  totalReports: number;
  verifiedReports: number;
  categoriesMask: number;
  /** Bit of the newest counting report's category, or -1. */
  lastCategoryBit: number;
  /** Milliseconds, or NaN when unknown. */
  firstSeenMs: number;
  lastSeenMs: number;
}

const NO_CATEGORY = 255;

/** The columns that hold data (and travel in a snapshot). */
export const CARRIED_COLUMNS = ["categories", "firstSeen", "lastCategory", "lastSeen", "risk", "score", "total", "verified"] as const;
export type CarriedColumn = (typeof CARRIED_COLUMNS)[number];

/**
 * The carried columns with their element types (`score:Uint8Array,…`): what a file holding them must match to be
 * read by this build (the index file and a snapshot's index blobs both record it).
 */
export function carriedColumnLayout(): string {
  const columns = new ReputationIndex(undefined, 0).toParts().columns;
  return CARRIED_COLUMNS.map((name) => `${name}:${columns[name].constructor.name}`).join(",");
}
export type ColumnArray = Uint8Array | Uint16Array | Uint32Array | Float64Array;

/** An index as parts: its trees and its carried columns, cut to the slots in use (0..slots-1). */
export interface IndexParts {
  v4: RadixTree4;
  v6: RadixTree6;
  slots: number;
  columns: Record<CarriedColumn, ColumnArray>;
}

/** Parts of an index in use (slots freed, listed networks): what the index file holds. */
export interface PersistedIndexParts extends IndexParts {
  /** Slots below `slots` that no entry uses. */
  freeSlots: Int32Array;
  /** Entries shorter than /32 or /128 in the trees. */
  networkCount: number;
}

export class ReputationIndex {
  v4 = new RadixTree4();
  v6 = new RadixTree6();
  /** Bumped on every change: blocklist ETags and caches key off it. */
  generation = 1;
  /** No slot's firstSeen is earlier than this (a lower bound; exact after `resetEarliestFirstSeen`). */
  earliestFirstSeen = Number.POSITIVE_INFINITY;

  private capacity: number;
  private freeSlots: number[] = [];
  private nextSlot = 0;
  /** The address of each slot, made on first need (see expiredAddresses) and kept current after. */
  private slotAddresses: SlotAddresses | null = null;
  score: Uint8Array;
  risk: Uint8Array;
  categories: Uint16Array;
  lastCategory: Uint8Array;
  total: Uint32Array;
  verified: Uint32Array;
  firstSeen: Float64Array;
  lastSeen: Float64Array;

  constructor(
    private readonly thresholds: RiskThresholds = DEFAULT_RISK_THRESHOLDS,
    initialCapacity = 1024,
  ) {
    this.capacity = initialCapacity;
    this.score = new Uint8Array(initialCapacity);
    this.risk = new Uint8Array(initialCapacity);
    this.categories = new Uint16Array(initialCapacity);
    this.lastCategory = new Uint8Array(initialCapacity);
    this.total = new Uint32Array(initialCapacity);
    this.verified = new Uint32Array(initialCapacity);
    this.firstSeen = new Float64Array(initialCapacity);
    this.lastSeen = new Float64Array(initialCapacity);
  }

  /**
   * An index over parts taken from `toParts()` (a snapshot) or `persistedParts()` (with the slots no entry uses):
   * nothing is rebuilt.
   */
  static fromParts(parts: IndexParts | PersistedIndexParts, thresholds: RiskThresholds = DEFAULT_RISK_THRESHOLDS): ReputationIndex {
    const { v4, v6, slots, columns } = parts;
    const freeSlots = "freeSlots" in parts ? parts.freeSlots : [];
    const free = freeSlots.length;
    if (v4.size + v6.size + free !== slots) throw new RangeError(`index trees hold ${v4.size + v6.size} entries and ${free} free slots, expected ${slots}`);
    const index = new ReputationIndex(thresholds, 0);
    for (const name of CARRIED_COLUMNS) {
      const column = columns[name];
      if (column.length !== slots) throw new RangeError(`index column ${name}: ${column.length} entries, expected ${slots}`);
      if (column.constructor !== index[name].constructor) throw new RangeError(`index column ${name}: not a ${index[name].constructor.name}`);
    }
    Object.assign(index, columns);
    index.v4 = v4;
    index.v6 = v6;
    index.freeSlots = Array.from(freeSlots);
    for (const slot of index.freeSlots) if (!(slot >= 0 && slot < slots)) throw new RangeError(`index free slot ${slot} is outside 0..${slots - 1}`);
    index.capacity = slots;
    index.nextSlot = slots;
    let earliest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < slots; i++) if (index.firstSeen[i] < earliest) earliest = index.firstSeen[i];
    index.earliestFirstSeen = earliest;
    let networks = "networkCount" in parts ? parts.networkCount : undefined;
    if (networks === undefined) {
      networks = 0;
      v4.walk((_network, prefixLength) => void (prefixLength < 32 && networks!++));
      v6.walk((_network, prefixLength) => void (prefixLength < 128 && networks!++));
    }
    index.networkCount = networks;
    return index;
  }

  /** The trees and carried columns; the index must have every slot in use (one built fresh, never removed from). */
  toParts(): IndexParts {
    if (this.freeSlots.length > 0) throw new Error("toParts needs an index with no free slots: build a fresh one");
    return { v4: this.v4, v6: this.v6, slots: this.nextSlot, columns: this.carriedColumns() };
  }

  /** The trees, the columns up to the highest slot ever used, and the slots free below it: for the index file. */
  persistedParts(): PersistedIndexParts {
    const freeSlots = Int32Array.from(this.freeSlots);
    return { v4: this.v4, v6: this.v6, slots: this.nextSlot, columns: this.carriedColumns(), freeSlots, networkCount: this.networkCount };
  }

  /** Views of the carried columns up to the highest slot ever used. */
  private carriedColumns(): Record<CarriedColumn, ColumnArray> {
    const slots = this.nextSlot;
    return Object.fromEntries(CARRIED_COLUMNS.map((name) => [name, this[name].subarray(0, slots)])) as Record<CarriedColumn, ColumnArray>;
  }

  /** Removes every listed network (entries shorter than /32 or /128) at once; returns how many there were. */
  removeAllNetworks(): number {
    if (this.networkCount === 0) return 0;
    const v4: [number, number][] = [];
    const v6: [Uint32Array, number][] = [];
    this.v4.walk((network, prefixLength) => void (prefixLength < 32 && v4.push([network, prefixLength])));
    this.v6.walk((network, prefixLength) => void (prefixLength < 128 && v6.push([Uint32Array.from(network), prefixLength])));
    for (const [network, prefixLength] of v4) {
      this.freeSlots.push(this.v4.getPrefix(network, prefixLength));
      this.v4.delete(network, prefixLength);
    }
    for (const [network, prefixLength] of v6) {
      this.freeSlots.push(this.v6.getPrefix(network, prefixLength));
      this.v6.delete(network, prefixLength);
    }
    this.networkCount = 0;
    this.intervals4 = null;
    this.generation++;
    this.changed(null);
    return v4.length + v6.length;
  }

  get size(): number {
    return this.v4.size + this.v6.size;
  }

  /** Listed networks (contract 12) in the trees: entries shorter than /32 or /128. */
  networkCount = 0;
  /** The IPv4 networks flattened for lookups; null until the first lookup after they changed. */
  private intervals4: NetworkIntervals4 | null = null;

  /**
   * The slot that answers for an address: its own entry, else the narrowest listed network around it, else -1
   * (NOT_FOUND). With no networks listed this is exactly `slotOf`.
   */
  answerSlotOf(ip: Ip): number {
    if (ip.version === 4) return this.answerSlotOfV4(ip.value);
    const own = this.v6.get(ip.words);
    return own !== NOT_FOUND || this.networkCount === 0 ? own : this.v6.longestMatch(ip.words);
  }

  answerSlotOfV4(value: number): number {
    const own = this.v4.get(value);
    if (own !== NOT_FOUND || this.networkCount === 0 || value < 0) return own;
    this.intervals4 ??= NetworkIntervals4.fromTree(this.v4);
    return this.intervals4.lookup(value);
  }

  /** The slot of an address's own entry, or -1 (NOT_FOUND) when it has no counting reports. */
  slotOf(ip: Ip): number {
    return ip.version === 4 ? this.v4.get(ip.value) : this.v6.get(ip.words);
  }

  slotOfV4(value: number): number {
    return this.v4.get(value);
  }

  slotOfV6(words: ArrayLike<number>): number {
    return this.v6.get(words);
  }

  record(slot: number): AddressRecord {
    return {
      reputationScore: this.score[slot],
      totalReports: this.total[slot],
      verifiedReports: this.verified[slot],
      categoriesMask: this.categories[slot],
      lastCategoryBit: this.lastCategory[slot] === NO_CATEGORY ? -1 : this.lastCategory[slot],
      firstSeenMs: this.firstSeen[slot],
      lastSeenMs: this.lastSeen[slot],
    };
  }

  private readonly watchers = new Set<(ip: Ip | null) => void>();

  /**
   * Calls `listener` after every change: with the address that entered, changed or left, or with null for anything
   * wider (a listed network, every network, the allowlist's touch). Caches of answers (the lookups' answer cache)
   * and of lists (the bouncers' journals) hear of every change here, whichever way it came. Returns the unsubscriber.
   */
  watch(listener: (ip: Ip | null) => void): () => void {
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  private changed(ip: Ip | null): void {
    for (const watcher of this.watchers) watcher(ip);
  }

  /** Sets an address's record (adding it if new). */
  upsert(ip: Ip, record: AddressRecord): void {
    let slot = this.slotOf(ip);
    if (slot === NOT_FOUND) {
      slot = this.allocateSlot();
      if (ip.version === 4) this.v4.set(ip.value, 32, slot);
      else this.v6.set(ip.words, 128, slot);
      this.slotAddresses?.set(slot, ip);
    }
    this.write(slot, record);
    this.generation++;
    this.changed(ip);
  }

  /** Like upsert, but leaves the address alone (nothing is signalled) when the record is the same. */
  upsertIfChanged(ip: Ip, record: AddressRecord): boolean {
    const slot = this.slotOf(ip);
    if (slot !== NOT_FOUND && sameRecord(this.record(slot), record)) return false;
    this.upsert(ip, record);
    return true;
  }

  /** Forgets an address (no counting reports left). */
  remove(ip: Ip): boolean {
    const slot = this.slotOf(ip);
    if (slot === NOT_FOUND) return false;
    if (ip.version === 4) this.v4.delete(ip.value, 32);
    else this.v6.delete((ip as Ipv6).words, 128);
    this.slotAddresses?.clear(slot);
    this.freeSlots.push(slot);
    this.generation++;
    this.changed(ip);
    return true;
  }

  /** Sets a listed network's record (adding it if new). A full-length CIDR is an address: use upsert. */
  upsertNetwork(cidr: Cidr, record: AddressRecord): void {
    const ip = cidr.network;
    let slot = ip.version === 4 ? this.v4.getPrefix(ip.value, cidr.prefixLength) : this.v6.getPrefix(ip.words, cidr.prefixLength);
    if (slot === NOT_FOUND) {
      slot = this.allocateSlot();
      if (ip.version === 4) this.v4.set(ip.value, cidr.prefixLength, slot);
      else this.v6.set(ip.words, cidr.prefixLength, slot);
      this.networkCount++;
      if (ip.version === 4) this.intervals4 = null;
    } else if (sameRecord(this.record(slot), record)) {
      return;
    }
    this.write(slot, record);
    this.generation++;
    this.changed(null);
  }

  removeNetwork(cidr: Cidr): boolean {
    const ip = cidr.network;
    const slot = ip.version === 4 ? this.v4.getPrefix(ip.value, cidr.prefixLength) : this.v6.getPrefix(ip.words, cidr.prefixLength);
    if (slot === NOT_FOUND) return false;
    if (ip.version === 4) this.v4.delete(ip.value, cidr.prefixLength);
    else this.v6.delete(ip.words, cidr.prefixLength);
    if (ip.version === 4) this.intervals4 = null;
    this.freeSlots.push(slot);
    this.networkCount--;
    this.generation++;
    this.changed(null);
    return true;
  }

  /**
   * The addresses whose first counting report is older than `cutoff` (past retention), found by a scan of the
   * slots; sets earliestFirstSeen to the earliest of the others, exact. The first call makes the slots' address
   * map by one walk of the trees.
   */
  expiredAddresses(cutoff: number): Ip[] {
    const addresses = (this.slotAddresses ??= this.mapSlotAddresses());
    const firstSeen = this.firstSeen;
    const due: Ip[] = [];
    let earliest = Number.POSITIVE_INFINITY;
    for (let slot = 0; slot < this.nextSlot; slot++) {
      const first = firstSeen[slot];
      // NaN (a listing's record, or a free slot's leftover) compares false both ways.
      if (!(first < earliest || first < cutoff) || !addresses.holdsAddress(slot)) continue;
      if (first < cutoff) due.push(addresses.addressAt(slot));
      else earliest = first;
    }
    this.earliestFirstSeen = earliest;
    return due;
  }

  private mapSlotAddresses(): SlotAddresses {
    const addresses = new SlotAddresses(this.capacity);
    this.v4.walk((network, len, slot) => void (len === 32 && addresses.setIpv4(slot, network)));
    this.v6.walk((words, len, slot) => void (len === 128 && addresses.setIpv6(slot, words)));
    return addresses;
  }

  /** Lays the trees' nodes out for fast lookups after a bulk build. */
  compact(): void {
    this.v4.compact();
    this.v6.compact();
  }

  /** Marks an unrelated change (allowlist, listed networks) that changes what lists contain. */
  touch(): void {
    this.generation++;
    this.changed(null);
  }

  private write(slot: number, r: AddressRecord): void {
    this.score[slot] = r.reputationScore;
    this.risk[slot] = riskCodeOfScore(r.reputationScore, this.thresholds);
    this.categories[slot] = r.categoriesMask;
    this.lastCategory[slot] = r.lastCategoryBit < 0 ? NO_CATEGORY : r.lastCategoryBit;
    this.total[slot] = r.totalReports;
    this.verified[slot] = r.verifiedReports;
    this.firstSeen[slot] = r.firstSeenMs;
    if (r.firstSeenMs < this.earliestFirstSeen) this.earliestFirstSeen = r.firstSeenMs;
    this.lastSeen[slot] = r.lastSeenMs;
  }

  private allocateSlot(): number {
    const reused = this.freeSlots.pop();
    if (reused !== undefined) return reused;
    if (this.nextSlot === this.capacity) this.grow();
    return this.nextSlot++;
  }

  private grow(): void {
    const capacity = Math.ceil(this.capacity * 1.5) + 16;
    this.score = grownTo(this.score, capacity);
    this.risk = grownTo(this.risk, capacity);
    this.categories = grownTo(this.categories, capacity);
    this.lastCategory = grownTo(this.lastCategory, capacity);
    this.total = grownTo(this.total, capacity);
    this.verified = grownTo(this.verified, capacity);
    this.firstSeen = grownTo(this.firstSeen, capacity);
    this.lastSeen = grownTo(this.lastSeen, capacity);
    this.slotAddresses?.grow(capacity);
    this.capacity = capacity;
  }

  /** Bytes held by the index: trees plus columns. */
  get byteSize(): number {
    return this.v4.byteSize + this.v6.byteSize + this.capacity * (1 + 1 + 2 + 1 + 4 + 4 + 8 + 8) + (this.slotAddresses?.byteSize ?? 0);
  }
}

const sameTime = (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b));

/** Whether two records say the same (times compared as the index keeps them). */
export function sameRecord(a: AddressRecord, b: AddressRecord): boolean {
  return (
    a.reputationScore === b.reputationScore &&
    a.totalReports === b.totalReports &&
    a.verifiedReports === b.verifiedReports &&
    a.categoriesMask === b.categoriesMask &&
    a.lastCategoryBit === b.lastCategoryBit &&
    sameTime(a.firstSeenMs, b.firstSeenMs) &&
    sameTime(a.lastSeenMs, b.lastSeenMs)
  );
}
