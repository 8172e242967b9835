// Builds the reputation index from the `addresses` table at start, and brings it up to date with changes other
// processes committed (CLI imports, jobs run by hand), read from the change log the table's triggers write.

import { parseIp } from "../../domain/ip";
import type { RiskThresholds } from "../../domain/risk";
import { ReputationIndex } from "../../index/reputation-index";
import { ADDRESS_ROW_COLUMNS, recordOfRow, type AddressRow } from "../../store/address-rows";
import type { Store } from "../../store/database";

export class IndexSync {
  /** The last change-log entry the index reflects. */
  private lastSeq = 0;
  private readonly selectChanges;
  private readonly selectAddress;
  private readonly pruneLog;

  constructor(
    store: Store,
    readonly index: ReputationIndex,
  ) {
    this.selectChanges = store.sqlite.prepare<{ seq: number; ip: string }, [number]>(
      "SELECT seq, ip FROM address_change_log WHERE seq > ? ORDER BY seq LIMIT 100000",
    );
    this.selectAddress = store.sqlite.prepare<AddressRow, [string]>(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses WHERE ip = ?`);
    this.pruneLog = store.sqlite.prepare<unknown, [number]>("DELETE FROM address_change_log WHERE seq <= ?");
  }

  /** Loads every address into a new index, in one read transaction so the log position matches the rows. */
  static build(store: Store, thresholds: RiskThresholds): IndexSync {
    const index = new ReputationIndex(thresholds);
    const sync = new IndexSync(store, index);
    store.sqlite.transaction(() => {
      const max = store.sqlite.query("SELECT coalesce(max(seq), 0) AS seq FROM address_change_log").get() as { seq: number };
      sync.lastSeq = max.seq;
      const rows = store.sqlite.prepare<AddressRow, []>(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses`);
      for (const row of rows.iterate()) index.upsert(parseIp(row.ip), recordOfRow(row));
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
          if (this.index.upsertIfChanged(ip, recordOfRow(row))) changed++;
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
