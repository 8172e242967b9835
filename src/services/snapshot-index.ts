// The reputation index carried pre-built in a snapshot: both radix trees as their serialized buffers and every
// typed-array column of the index as its raw bytes, so an offline command or a snapshot server starts by reading
// a few blobs instead of inserting a million addresses. The columns are found by looking at an index instance,
// not listed here, so a column added to ReputationIndex travels without a change in this file; a snapshot whose
// layout this build does not know is rebuilt from its `addresses` rows instead (slower, same answers).

import type { Database } from "bun:sqlite";
import { categoryBit, type Category } from "../domain/categories";
import { parseIp, type Ip } from "../domain/ip";
import type { RiskThresholds } from "../domain/risk";
import { ReputationIndex, type AddressRecord } from "../index/reputation-index";
import { RadixTree4 } from "../index/radix4";
import { RadixTree6 } from "../index/radix6";

type Column = Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array;
type ColumnConstructor = { new (length: number): Column; new (buffer: ArrayBufferLike, offset: number, length: number): Column; BYTES_PER_ELEMENT: number };

/** Per-slot bookkeeping of a running index, not data: rebuilt empty on load. */
const NOT_CARRIED = new Set(["stamp"]);

const TREES = ["v4", "v6"] as const;

/** One row of the snapshot's `index_data` table. */
export interface IndexBlob {
  name: string;
  /** A typed array's constructor name, or "radix4" / "radix6" for a tree. */
  type: string;
  bytes: Uint8Array;
}

/** The typed-array columns of an index, by property name, in a fixed order. */
function columnsOf(index: ReputationIndex): [string, Column][] {
  return Object.entries(index)
    .filter(([name, value]) => ArrayBuffer.isView(value) && !(value instanceof DataView) && !NOT_CARRIED.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) as [string, Column][];
}

/** What a reader must understand to use the blobs: the trees and each column's name and element type. */
export function indexLayout(): string {
  const probe = new ReputationIndex(undefined, 0);
  return ["radix4", "radix6", ...columnsOf(probe).map(([name, column]) => `${name}:${column.constructor.name}`)].join(",");
}

/**
 * The blobs of an index whose slots are exactly 0..size-1 (one built fresh by inserting, never removing):
 * the trees' values are those slots, and each column is cut to `size` entries.
 */
export function indexBlobs(index: ReputationIndex): IndexBlob[] {
  const slots = index.size;
  const blobs: IndexBlob[] = [
    { name: "v4", type: "radix4", bytes: index.v4.serialize() },
    { name: "v6", type: "radix6", bytes: index.v6.serialize() },
  ];
  for (const [name, column] of columnsOf(index)) {
    blobs.push({ name, type: column.constructor.name, bytes: new Uint8Array(column.buffer, column.byteOffset, slots * column.BYTES_PER_ELEMENT) });
  }
  return blobs;
}

/** A typed array over a blob's bytes: a view when aligned, else a copy. */
function columnOver(ctor: ColumnConstructor, bytes: Uint8Array): Column {
  const length = bytes.byteLength / ctor.BYTES_PER_ELEMENT;
  if (!Number.isInteger(length)) throw new RangeError("index column: size is not a whole number of elements");
  if (bytes.byteOffset % ctor.BYTES_PER_ELEMENT === 0) return new ctor(bytes.buffer, bytes.byteOffset, length);
  const copy = new Uint8Array(bytes);
  return new ctor(copy.buffer, 0, length);
}

/**
 * The index from its blobs, or null when they do not fit this build's ReputationIndex (another layout): the
 * caller then rebuilds from the rows. Throws on a damaged tree buffer.
 */
export function indexFromBlobs(blobs: readonly IndexBlob[], slots: number, thresholds: RiskThresholds): ReputationIndex | null {
  const byName = new Map(blobs.map((b) => [b.name, b]));
  const index = new ReputationIndex(thresholds, 0);
  const writable = index as unknown as Record<string, unknown>;
  // The slot allocator's state is private to ReputationIndex; a build that renamed it cannot take the blobs.
  if (!("capacity" in writable) || !("nextSlot" in writable)) return null;
  for (const [name, column] of columnsOf(index)) {
    const blob = byName.get(name);
    if (blob === undefined || blob.type !== column.constructor.name) return null;
    const loaded = columnOver(column.constructor as ColumnConstructor, blob.bytes);
    if (loaded.length !== slots) throw new RangeError(`index column ${name}: ${loaded.length} entries, expected ${slots}`);
    writable[name] = loaded;
  }
  const v4 = byName.get("v4");
  const v6 = byName.get("v6");
  if (v4?.type !== "radix4" || v6?.type !== "radix6") return null;
  const trees = { v4: RadixTree4.deserialize(v4.bytes), v6: RadixTree6.deserialize(v6.bytes) };
  if (trees.v4.size + trees.v6.size !== slots) throw new RangeError(`index trees hold ${trees.v4.size + trees.v6.size} entries, expected ${slots}`);
  for (const name of TREES) writable[name] = trees[name];
  writable.stamp = new Float64Array(slots);
  writable.capacity = slots;
  writable.nextSlot = slots;
  let earliest = Number.POSITIVE_INFINITY;
  const first = index.firstSeen;
  for (let i = 0; i < slots; i++) if (first[i] < earliest) earliest = first[i];
  index.earliestFirstSeen = earliest;
  return index;
}

/** An `addresses` row (main database or snapshot) as the index keeps it. */
export interface AddressRow {
  ip: string;
  score: number;
  total: number;
  verified: number;
  mask: number;
  lastCategory: string | null;
  firstSeen: number | null;
  lastSeen: number | null;
}

export const ADDRESS_ROW_COLUMNS = `ip, reputation_score AS score, total_reports AS total, verified_reports AS verified,
  categories_mask AS mask, last_category AS lastCategory, first_seen AS firstSeen, last_seen AS lastSeen`;

export function recordOfRow(row: AddressRow): AddressRecord {
  return {
    reputationScore: row.score,
    totalReports: row.total,
    verifiedReports: row.verified,
    categoriesMask: row.mask,
    lastCategoryBit: row.lastCategory ? categoryBit(row.lastCategory as Category) : -1,
    firstSeenMs: row.firstSeen ?? Number.NaN,
    lastSeenMs: row.lastSeen ?? Number.NaN,
  };
}

/**
 * An index of just these addresses, from their `addresses` rows (snapshot or main database: the same columns):
 * what a command that looks up a handful of addresses needs, read in a few milliseconds. Lookups of these
 * addresses give what the whole index gives; any other address looks unreported, so use it for these only.
 */
export function indexOfAddresses(db: Database, ips: readonly Ip[], thresholds: RiskThresholds): ReputationIndex {
  const index = new ReputationIndex(thresholds, Math.max(16, ips.length));
  const rows = db
    .query(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses WHERE ip IN (SELECT value FROM json_each(?)) ORDER BY ip`)
    .all(JSON.stringify(ips.map((ip) => ip.text))) as AddressRow[];
  for (const row of rows) index.upsert(parseIp(row.ip), recordOfRow(row));
  return index;
}

/** The slow path: the index built by inserting every `addresses` row of a snapshot. */
export function indexFromRows(db: Database, thresholds: RiskThresholds): ReputationIndex {
  const index = new ReputationIndex(thresholds);
  for (const row of db.query(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses ORDER BY ip`).iterate() as IterableIterator<AddressRow>) {
    index.upsert(parseIp(row.ip), recordOfRow(row));
  }
  return index;
}
