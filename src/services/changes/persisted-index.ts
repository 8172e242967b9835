// The reputation index persisted beside the database (DATA_DIR/index.bin): written on a clean shutdown and now and
// then while the server runs, read at start when it is of this database at a state the change log still leads
// from. Anything else (no file, a damaged or foreign one, a restored backup, a log pruned past it or longer than
// replaying is worth, a migration since, other risk thresholds) rebuilds from the `addresses` table as before,
// and the log says which and why. The file holds the
// table's rows only: listed networks and the addresses only a feed lists are dropped on load and put back from
// the feeds, as after a rebuild.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseIp, type Ip } from "../../domain/ip";
import type { RiskThresholds } from "../../domain/risk";
import { encodeIndexFile, IndexFileProblem, openIndexFile, writeIndexFile, writeIndexFileInBackground } from "../../index/index-file";
import { NOT_FOUND } from "../../index/radix-common";
import { ReputationIndex } from "../../index/reputation-index";
import { inReadTransaction, type Store } from "../../store/database";
import { addressGeneration, addressRowCount, changeLogHolds, stampIndexGeneration } from "../../store/index-generation";
import { IndexSync } from "./index-sync";

export const INDEX_FILE = "index.bin";

export const indexFilePath = (dataDir: string): string => join(dataDir, INDEX_FILE);

export interface OpenedIndex {
  sync: IndexSync;
  /** "loaded" from the file (and `replayed` logged changes applied), or "rebuilt" from the table. */
  source: "loaded" | "rebuilt";
  replayed: number;
  /** Why the file was not used, when rebuilt. */
  reason: string | null;
  ms: number;
}

/** The index of the store: from the file at `path` when it matches the store exactly, else rebuilt from the table. */
export function openIndex(store: Store, thresholds: RiskThresholds, path: string): OpenedIndex {
  const started = performance.now();
  const loaded = tryLoad(store, thresholds, path);
  if (loaded instanceof IndexSync) {
    const replayed = loaded.follow();
    return { sync: loaded, source: "loaded", replayed, reason: null, ms: performance.now() - started };
  }
  const sync = IndexSync.build(store, thresholds);
  return { sync, source: "rebuilt", replayed: 0, reason: loaded, ms: performance.now() - started };
}

/**
 * Replaying a change reads its row by address (a few microseconds each); rebuilding reads every row in one scan.
 * Measured at 1 M addresses: 100,000 replayed in 0.95 s, a rebuild 2.0 s; past about a fifth of the index the
 * scan is quicker.
 */
const replayLimit = (slots: number): number => 10_000 + slots / 5;

/** The index read from the file, or why it cannot be used. */
function tryLoad(store: Store, thresholds: RiskThresholds, path: string): IndexSync | string {
  if (!existsSync(path)) return `there is no ${INDEX_FILE} yet`;
  try {
    const reader = openIndexFile(path);
    const { stamp } = reader;
    const written = reader.thresholds;
    if (written?.low !== thresholds.low || written.medium !== thresholds.medium || written.high !== thresholds.high) return `${INDEX_FILE} was written with other risk thresholds`;
    const problem = inReadTransaction(store, () => {
      const now = addressGeneration(store);
      if (now.token !== stamp.token) return `${INDEX_FILE} is not of this database as it is (another database, or a backup restored)`;
      if (now.schema !== stamp.schema) return `the database's schema changed since ${INDEX_FILE} was written`;
      if (now.seq < stamp.seq) return `${INDEX_FILE} is newer than the database (a backup restored)`;
      if (now.seq - stamp.seq > replayLimit(reader.slots)) return `${now.seq - stamp.seq} changes since ${INDEX_FILE} was written: rebuilding is quicker than replaying them`;
      if (!changeLogHolds(store, stamp.seq, now.seq)) return `the changes since ${INDEX_FILE} was written are no longer in the change log`;
      return null;
    });
    if (problem !== null) return problem;
    const { parts, dropped } = reader.read();
    const index = ReputationIndex.fromParts(parts, thresholds);
    index.removeAllNetworks();
    for (const text of dropped) index.remove(parseIp(text));
    return IndexSync.resume(store, index, stamp.seq);
  } catch (error) {
    return `${INDEX_FILE} was not used: ${describe(error)}`;
  }
}

const describe = (error: unknown): string => (error instanceof IndexFileProblem || error instanceof RangeError ? error.message : String(error));

/** What a write needs beyond the index: the addresses only a feed lists (they have no row) and the row check. */
export interface ListingOnlyAddresses {
  candidates(): Iterable<Ip>;
  /** Which of these addresses have a row. */
  rowsAmong(ipTexts: readonly string[]): Set<string>;
}

/**
 * Writes the index to `path` as the table stands now: under the write lock, the index catches up with the log,
 * is checked against the table's row count and copied out, and the database gets the file's new token. Throws
 * (and leaves the previous file, still valid, in place) when the index and the table disagree.
 */
export function persistIndex(store: Store, sync: IndexSync, thresholds: RiskThresholds, path: string, listings: ListingOnlyAddresses): PersistedIndexFile {
  const { generation, captured } = captureIndex(store, sync, listings);
  // Synchronous from the copy to the file: nothing changes the index meanwhile.
  const bytes = writeIndexFile(path, generation, thresholds, captured);
  sync.persistedSeq = generation.seq;
  return { indexGeneration: captured.indexGeneration, bytes };
}

/**
 * The same, with only the capture and a copy of the bytes on the event loop (tens of milliseconds at 1 M
 * addresses); the file is written in the background, and the change log may be pruned past the old file's
 * position only once the new one is in place. One at a time: the caller waits for the last before the next.
 */
export async function persistIndexInBackground(store: Store, sync: IndexSync, thresholds: RiskThresholds, path: string, listings: ListingOnlyAddresses): Promise<PersistedIndexFile> {
  const { generation, captured } = captureIndex(store, sync, listings);
  const encoded = encodeIndexFile(generation, thresholds, captured, true);
  const bytes = await writeIndexFileInBackground(path, encoded);
  sync.persistedSeq = generation.seq;
  return { indexGeneration: captured.indexGeneration, bytes };
}

/** Under the write lock: the index caught up with the log, checked against the table, its parts taken. */
function captureIndex(store: Store, sync: IndexSync, listings: ListingOnlyAddresses) {
  const index = sync.index;
  return stampIndexGeneration(store, () => {
    sync.catchUp();
    const inIndex: string[] = [];
    for (const ip of listings.candidates()) if (index.slotOf(ip) !== NOT_FOUND) inIndex.push(ip.text);
    const withRow = listings.rowsAmong(inIndex);
    const dropped = inIndex.filter((text) => !withRow.has(text));
    const rows = addressRowCount(store);
    const entries = index.size - index.networkCount - dropped.length;
    if (entries !== rows) throw new Error(`the index holds ${entries} addresses with a row, the table ${rows}: ${INDEX_FILE} not written`);
    // The generation after the catch-up: what the file holds (another process's changes may just have come in).
    return { parts: index.persistedParts(), dropped, indexGeneration: index.generation };
  });
}

/** A written index file: the index's generation it holds, and its size. */
export interface PersistedIndexFile {
  indexGeneration: number;
  bytes: number;
}

/** Below this many rows a start rebuilds the index in a few milliseconds: a command leaves the file as it is. */
export const REFRESH_FROM_ROWS = 10_000;

/**
 * After a command changed many addresses (`import reports`): when the next start would rebuild the index (no file,
 * more changes than replaying is worth, ...) and that costs something, the index is rebuilt here and written to
 * `path`, so the next `serve` loads it. Null when nothing was written: the next start loads the file as it is
 * (replaying what changed), or the table is small. The index holds the table's rows only, as a file does.
 */
export function refreshIndexFile(store: Store, thresholds: RiskThresholds, path: string): { addresses: number; bytes: number; ms: number; reason: string } | null {
  const started = performance.now();
  if (addressRowCount(store) < REFRESH_FROM_ROWS) return null;
  const opened = openIndex(store, thresholds, path);
  try {
    if (opened.source === "loaded") return null;
    const noListings: ListingOnlyAddresses = { candidates: () => [], rowsAmong: () => new Set() };
    const { bytes } = persistIndex(store, opened.sync, thresholds, path, noListings);
    return { addresses: opened.sync.index.size, bytes, ms: performance.now() - started, reason: opened.reason ?? "" };
  } finally {
    opened.sync.stopFollowing();
  }
}
