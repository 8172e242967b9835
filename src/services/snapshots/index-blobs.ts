// The reputation index carried pre-built in a snapshot: both radix trees as their serialized buffers and every
// typed-array column of the index as its raw bytes, so an offline command or a snapshot server starts by reading
// a few blobs instead of inserting a million addresses. The columns are those ReputationIndex names as carried
// (CARRIED_COLUMNS); a snapshot whose layout this build does not know is rebuilt from its `addresses` rows
// instead (slower, same answers).

import { addressRowsOf, everyAddressRow } from "../../store/snapshot-file";
import type { Database } from "bun:sqlite";
import { parseIp, type Ip } from "../../domain/ip";
import type { RiskThresholds } from "../../domain/risk";
import { CARRIED_COLUMNS, carriedColumnLayout, ReputationIndex, type CarriedColumn, type ColumnArray } from "../../index/reputation-index";
import { ADDRESS_ROW_COLUMNS, recordOfRow, type AddressRow } from "../../store/address-rows";
import { RadixTree4 } from "../../index/radix4";
import { RadixTree6 } from "../../index/radix6";
import { allAtOnce } from "../../domain/steps";

type ColumnConstructor = { new (buffer: ArrayBufferLike, offset: number, length: number): ColumnArray; BYTES_PER_ELEMENT: number };

/** One row of the snapshot's `index_data` table. */
export interface IndexBlob {
  name: string;
  /** A typed array's constructor name, or "radix4" / "radix6" for a tree. */
  type: string;
  bytes: Uint8Array;
}

/** What a reader must understand to use the blobs: the trees and each column's name and element type. */
export function indexLayout(): string {
  return `radix4,radix6,${carriedColumnLayout()}`;
}

/** The blobs of an index whose slots are exactly 0..size-1 (one built fresh by inserting, never removing). */
export function indexBlobs(index: ReputationIndex): IndexBlob[] {
  const { v4, v6, columns } = index.toParts();
  return [
    { name: "v4", type: "radix4", bytes: v4.serialize() },
    { name: "v6", type: "radix6", bytes: v6.serialize() },
    ...CARRIED_COLUMNS.map((name) => {
      const column = columns[name];
      return { name, type: column.constructor.name, bytes: new Uint8Array(column.buffer, column.byteOffset, column.byteLength) };
    }),
  ];
}

/** A typed array over a blob's bytes: a view when aligned, else a copy. */
function columnOver(ctor: ColumnConstructor, bytes: Uint8Array): ColumnArray {
  const length = bytes.byteLength / ctor.BYTES_PER_ELEMENT;
  if (!Number.isInteger(length)) throw new RangeError("index column: size is not a whole number of elements");
  if (bytes.byteOffset % ctor.BYTES_PER_ELEMENT === 0) return new ctor(bytes.buffer, bytes.byteOffset, length);
  const copy = new Uint8Array(bytes);
  return new ctor(copy.buffer, 0, length);
}

/**
 * The index from its blobs, or null when they do not fit this build's index layout (the caller then rebuilds
 * from the rows). Throws on a damaged tree buffer or columns of the wrong size.
 */
export function indexFromBlobs(blobs: readonly IndexBlob[], thresholds: RiskThresholds): ReputationIndex | null {
  return allAtOnce(indexFromBlobsInSteps(blobs, thresholds));
}

/** The same in steps: each tree copied a few MiB a step (tens of MiB at a million addresses), its links checked in one. */
export function* indexFromBlobsInSteps(blobs: readonly IndexBlob[], thresholds: RiskThresholds, options: { linksChecked?: boolean; networkCount?: number } = {}): Generator<void, ReputationIndex | null> {
  const byName = new Map(blobs.map((b) => [b.name, b]));
  const probe = new ReputationIndex(undefined, 0).toParts().columns;
  const columns = {} as Record<CarriedColumn, ColumnArray>;
  for (const name of CARRIED_COLUMNS) {
    const blob = byName.get(name);
    const ctor = probe[name].constructor as unknown as ColumnConstructor;
    if (blob === undefined || blob.type !== probe[name].constructor.name) return null;
    columns[name] = columnOver(ctor, blob.bytes);
  }
  const v4 = byName.get("v4");
  const v6 = byName.get("v6");
  if (v4?.type !== "radix4" || v6?.type !== "radix6") return null;
  // Slots are the addresses and the listed networks: as many as each column holds (fromParts checks the trees agree).
  const slots = columns.score.length;
  const v4Tree = yield* RadixTree4.deserializeInSteps(v4.bytes, options);
  yield;
  const v6Tree = yield* RadixTree6.deserializeInSteps(v6.bytes, options);
  yield;
  const parts = { v4: v4Tree, v6: v6Tree, slots, columns };
  // Counted by walking both trees unless known (the blob reader's thread counted them).
  return ReputationIndex.fromParts(options.networkCount === undefined ? parts : { ...parts, freeSlots: new Int32Array(0), networkCount: options.networkCount }, thresholds);
}

/**
 * An index of just these addresses, from their `addresses` rows (snapshot or main database: the same columns):
 * what a command that looks up a handful of addresses needs, read in a few milliseconds. Lookups of these
 * addresses give what the whole index gives; any other address looks unreported, so use it for these only.
 */
export function indexOfAddresses(db: Database, ips: readonly Ip[], thresholds: RiskThresholds): ReputationIndex {
  const index = new ReputationIndex(thresholds, Math.max(16, ips.length));
  for (const row of addressRowsOf(db, ips.map((ip) => ip.text))) index.upsert(parseIp(row.ip), recordOfRow(row));
  return index;
}

/** The slow path: the index built by inserting every `addresses` row of a snapshot. */
export function indexFromRows(db: Database, thresholds: RiskThresholds): ReputationIndex {
  const index = new ReputationIndex(thresholds);
  for (const row of everyAddressRow(db)) {
    index.upsert(parseIp(row.ip), recordOfRow(row));
  }
  return index;
}
