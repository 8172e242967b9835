// The reputation index as one file (DATA_DIR/index.bin), so a server starts by reading it instead of inserting
// every `addresses` row: a header (JSON: what the file is of, where each section lies and its hash), then the
// sections: both radix trees as `serialize` writes them, every carried column's bytes, the free slots, and the
// addresses to drop on load (entries a feed put in without a row). Written to a temporary file and renamed, so
// a reader sees the old file or the new one; a torn or damaged file fails its hashes and is not used.
//
// The generation the file was taken at (`stamp`) is opaque here: the caller decides whether it still matches.

import { closeSync, ftruncateSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { CARRIED_COLUMNS, carriedColumnLayout, type CarriedColumn, type ColumnArray, type PersistedIndexParts, ReputationIndex } from "./reputation-index";
import type { RiskThresholds } from "../domain/risk";
import { RadixTree4 } from "./radix4";
import { RadixTree6 } from "./radix6";

const MAGIC = "AIINDEX1";
const FORMAT_VERSION = 1;
const ALIGN = 8;
/** Longest header read before it is refused as not ours. */
const MAX_HEADER_BYTES = 1 << 20;

export interface IndexFileStamp {
  token: string;
  seq: number;
  schema: string;
}

interface Section {
  name: string;
  offset: number;
  byteLength: number;
  /** xxHash3 of the bytes, as a decimal string. */
  hash: string;
}

interface Header {
  formatVersion: number;
  layout: string;
  stamp: IndexFileStamp;
  thresholds: RiskThresholds;
  slots: number;
  networkCount: number;
  sections: Section[];
}


export interface IndexFileContent {
  parts: PersistedIndexParts;
  /** Addresses in the trees that the loaded index must not keep (normalized texts). */
  dropped: string[];
}

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const hashOf = (bytes: Uint8Array): string => Bun.hash.xxHash3(bytes).toString();
const padTo = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

/** A file's bytes, ready to write: chunks at their positions, and the whole size. */
export interface EncodedIndexFile {
  chunks: { bytes: Uint8Array; position: number }[];
  size: number;
}

/**
 * The bytes of the file of `content`. With `detached`, every chunk is a copy, so the index may change while they
 * are written (a write in the background); without, the columns' chunks are views of the live arrays.
 */
export function encodeIndexFile(stamp: IndexFileStamp, thresholds: RiskThresholds, content: IndexFileContent, detached = false): EncodedIndexFile {
  const { parts, dropped } = content;
  const blobs: [string, Uint8Array][] = [
    ["v4", parts.v4.serialize()],
    ["v6", parts.v6.serialize()],
    ...CARRIED_COLUMNS.map((name): [string, Uint8Array] => [name, detached ? bytesOf(parts.columns[name]).slice() : bytesOf(parts.columns[name])]),
    ["freeSlots", bytesOf(parts.freeSlots)],
    ["dropped", new TextEncoder().encode(dropped.join("\n"))],
  ];
  let offset = 0;
  const sections = blobs.map(([name, bytes]) => {
    const section = { name, offset, byteLength: bytes.byteLength, hash: hashOf(bytes) };
    offset = padTo(offset + bytes.byteLength);
    return section;
  });
  const header: Header = { formatVersion: FORMAT_VERSION, layout: carriedColumnLayout(), stamp, thresholds, slots: parts.slots, networkCount: parts.networkCount, sections };
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const prefix = new Uint8Array(padTo(MAGIC.length + 16 + headerBytes.byteLength));
  prefix.set(new TextEncoder().encode(MAGIC));
  const view = new DataView(prefix.buffer);
  view.setUint32(MAGIC.length, headerBytes.byteLength, true);
  view.setBigUint64(MAGIC.length + 8, Bun.hash.xxHash3(headerBytes), true);
  prefix.set(headerBytes, MAGIC.length + 16);
  const chunks = [{ bytes: prefix, position: 0 }, ...blobs.map(([, bytes], i) => ({ bytes, position: prefix.byteLength + sections[i].offset }))];
  return { chunks, size: prefix.byteLength + offset };
}

/**
 * Writes `content` to `path` through `path.tmp` and a rename. Not fsynced: after a power loss the file
 * may be torn, which its hashes catch (the server then rebuilds).
 */
export function writeIndexFile(path: string, stamp: IndexFileStamp, thresholds: RiskThresholds, content: IndexFileContent): number {
  const encoded = encodeIndexFile(stamp, thresholds, content);
  // One name, not one per process: a write cut short by a crash leaves one stray file, replaced by the next write.
  const temporary = `${path}.tmp`;
  const fd = openSync(temporary, "w", 0o600);
  try {
    for (const { bytes, position } of encoded.chunks) writeAll(fd, bytes, position);
    // Empty or short last sections still end where the header says.
    ftruncateSync(fd, encoded.size);
    closeSync(fd);
    renameSync(temporary, path);
  } catch (error) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw error;
  }
  return encoded.size;
}

/**
 * Writes an encoded file (see encodeIndexFile with `detached`) the same way, with the writes done off the event
 * loop: writing 70 MB held a server's requests for 100-300 ms. The caller lets one such write run at a time.
 */
export async function writeIndexFileInBackground(path: string, encoded: EncodedIndexFile): Promise<number> {
  const temporary = `${path}.tmp`;
  const file = await open(temporary, "w", 0o600);
  try {
    for (const { bytes, position } of encoded.chunks) {
      let done = 0;
      while (done < bytes.byteLength) done += (await file.write(bytes, done, bytes.byteLength - done, position + done)).bytesWritten;
    }
    await file.truncate(encoded.size);
    await file.close();
    await rename(temporary, path);
  } catch (error) {
    await file.close().catch(() => {});
    await rm(temporary, { force: true });
    throw error;
  }
  return encoded.size;
}

function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
}

/** Why a file was not used (damaged, foreign, of another layout): the caller rebuilds and says this. */
export class IndexFileProblem extends Error {}

/** The stamp and settings of a file, read from its header alone: decide with it before reading the rest. */
export interface IndexFileReader {
  stamp: IndexFileStamp;
  thresholds: RiskThresholds;
  /** Slots in the file (entries and free slots): about the size of the index. */
  slots: number;
  /** Reads and checks every section; throws IndexFileProblem on a damaged file. */
  read(): IndexFileContent;
}

/**
 * Maps `path` (privately: nothing is ever written through the mapping) and checks its header; throws
 * IndexFileProblem when it is not a file this build can read. The sections are copied out of the mapping into
 * the index's own arrays, so the index never depends on the file (which the next write replaces); the mapping
 * goes with its last reference. Mapped rather than read: the bytes are hashed and copied straight from the page
 * cache, one copy fewer (at 1 M addresses, 30-50 ms instead of 80-110).
 */
export function openIndexFile(path: string): IndexFileReader {
  const size = statSync(path).size;
  const headLength = MAGIC.length + 16;
  if (size < headLength) throw new IndexFileProblem("it is truncated");
  const file = Bun.mmap(path, { shared: false });
  if (file.byteLength !== size) throw new IndexFileProblem("it changed while it was read");
  if (new TextDecoder().decode(file.subarray(0, MAGIC.length)) !== MAGIC) throw new IndexFileProblem("it is not an index file");
  const view = new DataView(file.buffer, file.byteOffset, headLength);
  const headerLength = view.getUint32(MAGIC.length, true);
  if (headerLength > MAX_HEADER_BYTES || headLength + headerLength > size) throw new IndexFileProblem("its header is damaged");
  const headerBytes = file.subarray(headLength, headLength + headerLength);
  if (Bun.hash.xxHash3(headerBytes) !== view.getBigUint64(MAGIC.length + 8, true)) throw new IndexFileProblem("its header is damaged");
  const header = JSON.parse(new TextDecoder().decode(headerBytes)) as Header;
  if (header.formatVersion !== FORMAT_VERSION || header.layout !== carriedColumnLayout()) throw new IndexFileProblem("it was written by another version");
  const base = padTo(headLength + headerLength);
  const end = Math.max(0, ...header.sections.map((s) => padTo(s.offset + s.byteLength)));
  if (base + end > size) throw new IndexFileProblem("it is truncated");
  if (base + end < size) throw new IndexFileProblem("it has bytes past its last section");
  return { stamp: header.stamp, thresholds: header.thresholds, slots: header.slots, read: () => readSections(file.subarray(base), header) };
}

type ColumnConstructor = { new (length: number): ColumnArray; BYTES_PER_ELEMENT: number };

function readSections(body: Uint8Array, header: Header): IndexFileContent {
  const byName = new Map(header.sections.map((s) => [s.name, s]));
  const section = (name: string): Uint8Array => {
    const s = byName.get(name);
    if (s === undefined) throw new IndexFileProblem(`it lacks its ${name} section`);
    if (s.offset % ALIGN !== 0) throw new IndexFileProblem(`its ${name} section is misplaced`);
    const bytes = body.subarray(s.offset, s.offset + s.byteLength);
    if (hashOf(bytes) !== s.hash) throw new IndexFileProblem(`its ${name} section is damaged`);
    return bytes;
  };
  const slots = header.slots;
  const probe = new ReputationIndex(undefined, 0).toParts().columns;
  const columns = {} as Record<CarriedColumn, ColumnArray>;
  for (const name of CARRIED_COLUMNS) {
    const ctor = probe[name].constructor as unknown as ColumnConstructor;
    const column = new ctor(slots);
    const bytes = section(name);
    if (bytes.byteLength !== column.byteLength) throw new IndexFileProblem(`its ${name} section has the wrong size`);
    bytesOf(column).set(bytes);
    columns[name] = column;
  }
  const freeBytes = section("freeSlots");
  if (freeBytes.byteLength % 4 !== 0) throw new IndexFileProblem("its freeSlots section has the wrong size");
  const freeSlots = new Int32Array(freeBytes.slice().buffer);
  const droppedText = new TextDecoder().decode(section("dropped"));
  if (!Number.isInteger(header.networkCount) || header.networkCount < 0) throw new IndexFileProblem("its header is damaged");
  try {
    // The trees copy the mapped bytes into arrays of their own.
    const v4 = RadixTree4.deserialize(section("v4"));
    const v6 = RadixTree6.deserialize(section("v6"));
    return { parts: { v4, v6, slots, columns, freeSlots, networkCount: header.networkCount }, dropped: droppedText === "" ? [] : droppedText.split("\n") };
  } catch (error) {
    if (error instanceof IndexFileProblem) throw error;
    throw new IndexFileProblem(`a tree is damaged (${(error as Error).message})`);
  }
}
