// Builds the reputation index from the `addresses` table at start (or takes one read from the index file, see
// persisted-index.ts), and brings it up to date with changes other processes committed (CLI imports, jobs run by
// hand), read from the change log the table's triggers write.

import { parseIp } from "../../domain/ip";
import type { RiskThresholds } from "../../domain/risk";
import { ReputationIndex } from "../../index/reputation-index";
import { addressChangeLog, readAllAddresses, recordOfRow } from "../../store/address-rows";
import type { Store } from "../../store/database";
import { dataVersion } from "../../store/database-health";
import { lastChangeSeq } from "../../store/index-generation";

/** Log entries read at a time by follow(). */
const FOLLOW_CHUNK = 100_000;
/** Log entries of other processes taken into the index per turn of the event loop (10-20 ms). */
const FOLLOW_SLICE = 2_000;
/**
 * Log entries deleted by one prune() at most: deleting a minute of heavy ingest (600k entries) at once held the
 * event loop for a third of a second; the caller prunes every 2 s, which keeps pace with 12k changes a second.
 */
export const PRUNE_CHUNK = 25_000;

export class IndexSync {
  /** The last change-log entry the index reflects. */
  private lastSeq = 0;
  /**
   * The log position of the index file on disk, when there is one: the log is kept after it, so a server that
   * stops without writing a newer file (a crash) replays from there instead of rebuilding.
   */
  persistedSeq: number | null = null;
  private readonly selectChanges;
  private readonly selectAddress;
  private readonly pruneLog;
  /**
   * SQLite's data_version when the index last took in every commit (NaN: not known). While it stays the same, no
   * other connection committed, so every logged change since is one of this server's own, already in the index.
   */
  private seenDataVersion = Number.NaN;
  private following = false;
  private stopped = false;

  constructor(
    private readonly store: Store,
    readonly index: ReputationIndex,
  ) {
    const log = addressChangeLog(store);
    this.selectChanges = log.since;
    this.selectAddress = log.address;
    this.pruneLog = log.prune;
  }

  /** Loads every address into a new index, in one read transaction so the log position matches the rows. */
  static build(store: Store, thresholds: RiskThresholds): IndexSync {
    const index = new ReputationIndex(thresholds);
    const sync = new IndexSync(store, index);
    const version = dataVersion(store.sqlite);
    readAllAddresses(store, (lastSeq, rows) => {
      sync.seenDataVersion = version;
      sync.lastSeq = lastSeq;
      for (const row of rows) index.upsert(parseIp(row.ip), recordOfRow(row));
    });
    index.compact();
    return sync;
  }

  /** An index that reflects the table up to the log's entry `lastSeq` (read from a file): `follow()` brings the rest. */
  static resume(store: Store, index: ReputationIndex, lastSeq: number): IndexSync {
    const sync = new IndexSync(store, index);
    sync.lastSeq = lastSeq;
    sync.persistedSeq = lastSeq;
    return sync;
  }

  /**
   * Applies the logged changes since the last call: each changed address is re-read and set (or removed). The
   * server's own writes are in the log too; re-applying them changes nothing, since identical records are
   * left alone. Returns how many addresses changed in the index.
   */
  follow(): number {
    let changed = 0;
    for (;;) {
      const step = this.followSome(FOLLOW_CHUNK);
      changed += step.changed;
      if (!step.more) return changed;
    }
  }

  /**
   * `follow()` for at most `limit` logged changes, so a caller can spread a long catch-up (another process's
   * import of a million addresses) over many turns of the event loop; `more` says whether entries are left.
   */
  followSome(limit: number): { changed: number; more: boolean } {
    // Read before the rows: a commit after it changes it, and the next catchUp() reads the log again.
    const version = dataVersion(this.store.sqlite);
    const rows = this.selectChanges.all(this.lastSeq, limit);
    let changed = 0;
    for (const text of new Set(rows.map((r) => r.ip))) {
      const ip = parseIp(text);
      const row = this.selectAddress.get(text);
      if (row) {
        if (this.index.upsertIfChanged(ip, recordOfRow(row))) changed++;
      } else if (this.index.remove(ip)) {
        changed++;
      }
    }
    if (rows.length > 0) this.lastSeq = rows[rows.length - 1].seq;
    if (rows.length < limit) this.seenDataVersion = version;
    return { changed, more: rows.length === limit };
  }

  /**
   * `followSome()` in slices of FOLLOW_SLICE, one per turn of the event loop, until nothing is left: another
   * process's import of a million addresses takes seconds to re-read, and one call would hold every lookup
   * meanwhile. A call while slices are under way does nothing (they go on to the log's end).
   */
  followInSlices(): void {
    if (this.following || this.stopped) return;
    this.following = true;
    const slice = () => {
      try {
        if (!this.stopped && this.followSome(FOLLOW_SLICE).more) {
          setImmediate(slice);
          return;
        }
      } catch (error) {
        console.error("following another process's changes failed (retried at its next commit):", error);
      }
      this.following = false;
    };
    slice();
  }

  /** No more slices (the store is about to close). */
  stopFollowing(): void {
    this.stopped = true;
  }

  /**
   * `follow()`, without reading the log when no other connection committed since the index last took in
   * everything: the entries since are then the server's own writes, which reached the index as they were
   * committed, and re-reading them (hundreds of thousands a minute under heavy ingest) held the event loop for
   * a second and more.
   */
  catchUp(): number {
    return this.skipOwnChanges() ? 0 : this.follow();
  }

  /**
   * Moves past the log's entries when all since the last full read are this connection's own, and says whether it
   * could. The log's position is read before data_version, so a commit between the two is not skipped.
   */
  private skipOwnChanges(): boolean {
    const seq = lastChangeSeq(this.store);
    if (dataVersion(this.store.sqlite) !== this.seenDataVersion) return false;
    if (seq > this.lastSeq) this.lastSeq = seq;
    return true;
  }

  /** Drops log entries the index already reflects (the server's own and others'), up to the index file's position. */
  prune(): void {
    // Another process's entries still to follow are left to the follower (see followSome): only what the index
    // reflects goes, which never waits for a long catch-up here.
    this.skipOwnChanges();
    this.pruneLog.run(Math.min(this.lastSeq, this.persistedSeq ?? this.lastSeq), PRUNE_CHUNK);
  }
}
