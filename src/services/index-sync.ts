// Builds the reputation index from the `addresses` table at start, and brings it up to date with changes other
// processes committed (CLI imports, jobs run by hand), read from the change log the table's triggers write.

import { categoryBit, type Category } from "../domain/categories";
import { parseIp } from "../domain/ip";
import type { RiskThresholds } from "../domain/risk";
import { ReputationIndex, type AddressRecord } from "../index/reputation-index";
import type { Store } from "../store/database";

interface AddressRow {
  ip: string;
  score: number;
  total: number;
  verified: number;
  mask: number;
  lastCategory: string | null;
  firstSeen: number | null;
  lastSeen: number | null;
}

const SELECT_COLUMNS = `ip, reputation_score AS score, total_reports AS total, verified_reports AS verified,
  categories_mask AS mask, last_category AS lastCategory, first_seen AS firstSeen, last_seen AS lastSeen`;

function recordOf(row: AddressRow): AddressRecord {
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

export class IndexSync {
  /** The last change-log entry the index reflects. */
  private lastSeq = 0;
  private readonly selectChanges;
  private readonly selectAddress;
  private readonly pruneLog;

  constructor(
    private readonly store: Store,
    readonly index: ReputationIndex,
  ) {
    this.selectChanges = store.sqlite.prepare<{ seq: number; ip: string }, [number]>(
      "SELECT seq, ip FROM address_change_log WHERE seq > ? ORDER BY seq LIMIT 100000",
    );
    this.selectAddress = store.sqlite.prepare<AddressRow, [string]>(`SELECT ${SELECT_COLUMNS} FROM addresses WHERE ip = ?`);
    this.pruneLog = store.sqlite.prepare<unknown, [number]>("DELETE FROM address_change_log WHERE seq <= ?");
  }

  /** Loads every address into a new index, in one read transaction so the log position matches the rows. */
  static build(store: Store, thresholds: RiskThresholds): IndexSync {
    const index = new ReputationIndex(thresholds);
    const sync = new IndexSync(store, index);
    store.sqlite.transaction(() => {
      const max = store.sqlite.query("SELECT coalesce(max(seq), 0) AS seq FROM address_change_log").get() as { seq: number };
      sync.lastSeq = max.seq;
      const rows = store.sqlite.prepare<AddressRow, []>(`SELECT ${SELECT_COLUMNS} FROM addresses`);
      for (const row of rows.iterate()) index.upsert(parseIp(row.ip), recordOf(row));
    })();
    index.compact();
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
      const rows = this.selectChanges.all(this.lastSeq);
      if (rows.length === 0) break;
      const ips = new Set(rows.map((r) => r.ip));
      for (const text of ips) {
        const ip = parseIp(text);
        const row = this.selectAddress.get(text);
        if (row) {
          if (this.index.upsertIfChanged(ip, recordOf(row))) changed++;
        } else if (this.index.remove(ip)) {
          changed++;
        }
      }
      this.lastSeq = rows[rows.length - 1].seq;
    }
    return changed;
  }

  /** Drops log entries the index already reflects (the server's own and others'). */
  prune(): void {
    this.follow();
    this.pruneLog.run(this.lastSeq);
  }
}
