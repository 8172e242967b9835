// The journal of each bouncer filter's decision list (contract 14): a checkpoint of the list and the changes since,
// each entry entering or leaving at a sequence number, so a pull reads what changed since its cursor and a bouncer
// whose cursor was dropped is still told what left. The primary keeps it in its database (migration 0006); an edge
// in its cursors' file, a snapshot server in memory (both create the tables here).

import { Database } from "bun:sqlite";

export interface JournalCheckpoint {
  seq: number;
  checkpointSeq: number;
  /** Changes up to this sequence number may be gone (pruned). */
  prunedSeq: number;
  /** Listed at checkpointSeq, ascending. */
  ids: Float64Array;
  /** The sequence number each of `ids` entered at. */
  entered: Uint32Array;
  v6Values: Record<string, string>;
}

export interface DecisionChange {
  seq: number;
  id: number;
  entered: boolean;
  v6Value: string | null;
}

/** The tables as migration 0006 makes them, for a database the migrations do not run on (an edge's file). */
const CREATE_TABLES = [
  "CREATE TABLE IF NOT EXISTS decision_changes (filter_key TEXT NOT NULL, seq INTEGER NOT NULL, id INTEGER NOT NULL, entered INTEGER NOT NULL, at INTEGER NOT NULL, v6_value TEXT, PRIMARY KEY (filter_key, seq, id))",
  "CREATE INDEX IF NOT EXISTS decision_changes_left_at ON decision_changes (filter_key, entered, at)",
  "CREATE TABLE IF NOT EXISTS decision_journals (filter_key TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, checkpoint_seq INTEGER NOT NULL, pruned_seq INTEGER NOT NULL, ids BLOB NOT NULL, entered BLOB NOT NULL, v6_values TEXT NOT NULL)",
];

interface CheckpointColumns {
  seq: number;
  checkpointSeq: number;
  prunedSeq: number;
  ids: Uint8Array;
  entered: Uint8Array;
  v6Values: string;
}

export class DecisionJournalTables {
  private readonly stmt;
  /** Change rows read by `changesSince` and `removedSince` (tests count work with it). */
  rowsRead = 0;

  /** `createTables`: for a database without the migrations (an edge's cursors file, or one in memory). */
  constructor(
    private readonly db: Database,
    createTables: boolean,
  ) {
    if (createTables) for (const sql of CREATE_TABLES) db.exec(sql);
    this.stmt = {
      checkpoint: db.prepare<CheckpointColumns, [string]>(
        "SELECT seq, checkpoint_seq AS checkpointSeq, pruned_seq AS prunedSeq, ids, entered, v6_values AS v6Values FROM decision_journals WHERE filter_key = ?",
      ),
      writeCheckpoint: db.prepare<unknown, [string, number, number, number, Uint8Array, Uint8Array, string]>(
        "INSERT OR REPLACE INTO decision_journals (filter_key, seq, checkpoint_seq, pruned_seq, ids, entered, v6_values) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      newestChange: db.prepare<{ seq: number | null }, [string]>("SELECT max(seq) AS seq FROM decision_changes WHERE filter_key = ?"),
      insertChange: db.prepare<unknown, [string, number, number, number, number, string | null]>(
        "INSERT OR REPLACE INTO decision_changes (filter_key, seq, id, entered, at, v6_value) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      changesSince: db.prepare<{ seq: number; id: number; entered: number; v6Value: string | null }, [string, number]>(
        "SELECT seq, id, entered, v6_value AS v6Value FROM decision_changes WHERE filter_key = ? AND seq > ? ORDER BY seq",
      ),
      removedSince: db.prepare<{ id: number; v6Value: string | null }, [string, number]>(
        "SELECT id, v6_value AS v6Value FROM decision_changes WHERE filter_key = ? AND entered = 0 AND at > ?",
      ),
      prune: db.prepare<unknown, [string, number, number]>("DELETE FROM decision_changes WHERE filter_key = ? AND at < ? AND seq <= ?"),
      prunedUpTo: db.prepare<{ seq: number | null }, [string, number]>(
        "SELECT max(seq) AS seq FROM decision_changes WHERE filter_key = ? AND at < ?",
      ),
      setPruned: db.prepare<unknown, [number, string]>("UPDATE decision_journals SET pruned_seq = max(pruned_seq, ?) WHERE filter_key = ?"),
    };
  }

  /** Tables in a database of their own in memory (a snapshot server's, which keeps its cursors in memory too). */
  static inMemory(): DecisionJournalTables {
    return new DecisionJournalTables(new Database(":memory:"), true);
  }

  checkpoint(filterKey: string): JournalCheckpoint | null {
    const row = this.stmt.checkpoint.get(filterKey);
    if (!row) return null;
    // The row's seq is the checkpoint's (or an older version's last append): later changes carry theirs.
    return {
      seq: Math.max(row.seq, this.stmt.newestChange.get(filterKey)?.seq ?? 0),
      checkpointSeq: row.checkpointSeq,
      prunedSeq: row.prunedSeq,
      ids: new Float64Array(alignedCopy(row.ids).buffer),
      entered: new Uint32Array(alignedCopy(row.entered).buffer),
      v6Values: JSON.parse(row.v6Values) as Record<string, string>,
    };
  }

  /**
   * Commits one change of the list: the ids that entered and left at `seq`, and, when given, a new checkpoint (the
   * whole list at `seq`). One transaction: a cursor never names a sequence number the journal does not hold.
   */
  append(
    filterKey: string,
    seq: number,
    atMs: number,
    entered: ArrayLike<number>,
    left: ArrayLike<number>,
    v6Value: (id: number) => string | null,
    checkpoint: JournalCheckpoint | null,
  ): void {
    this.db.transaction(() => {
      for (let i = 0; i < entered.length; i++) this.stmt.insertChange.run(filterKey, seq, entered[i], 1, atMs, v6Value(entered[i]));
      for (let i = 0; i < left.length; i++) this.stmt.insertChange.run(filterKey, seq, left[i], 0, atMs, v6Value(left[i]));
      // Without a checkpoint the journal's row is left as it is: updating its seq rewrote the whole row, blobs
      // included (0.3 s at 1 M listed, on every change of the list). The newest change carries the seq.
      if (checkpoint !== null) this.writeCheckpoint(filterKey, checkpoint);
    })();
  }

  writeCheckpoint(filterKey: string, c: JournalCheckpoint): void {
    this.stmt.writeCheckpoint.run(filterKey, c.seq, c.checkpointSeq, c.prunedSeq, bytesOf(c.ids), bytesOf(c.entered), JSON.stringify(c.v6Values));
  }

  /** Every change after `seq`, oldest first. */
  changesSince(filterKey: string, seq: number): DecisionChange[] {
    const rows = this.stmt.changesSince.all(filterKey, seq);
    this.rowsRead += rows.length;
    return rows.map((r) => ({ seq: r.seq, id: r.id, entered: r.entered === 1, v6Value: r.v6Value }));
  }

  /** The ids that left the list after `atMs` (some may have entered again since). */
  removedSince(filterKey: string, atMs: number): { id: number; v6Value: string | null }[] {
    const rows = this.stmt.removedSince.all(filterKey, atMs);
    this.rowsRead += rows.length;
    return rows;
  }

  /** The newest sequence number of a change older than `beforeMs` (0: none). */
  newestBefore(filterKey: string, beforeMs: number): number {
    return this.stmt.prunedUpTo.get(filterKey, beforeMs)?.seq ?? 0;
  }

  /**
   * Drops changes older than `beforeMs` that the checkpoint holds (seq up to `checkpointSeq`); returns the
   * sequence number up to which changes may now be missing (0: none dropped).
   */
  prune(filterKey: string, beforeMs: number, checkpointSeq: number): number {
    return this.db.transaction(() => {
      const upTo = Math.min(this.stmt.prunedUpTo.get(filterKey, beforeMs)?.seq ?? 0, checkpointSeq);
      if (upTo <= 0) return 0;
      this.stmt.prune.run(filterKey, beforeMs, upTo);
      this.stmt.setPruned.run(upTo, filterKey);
      return upTo;
    })();
  }
}

const bytesOf = (a: Float64Array | Uint32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** A fresh, aligned copy of a blob (SQLite's buffers may start at any offset). */
export function alignedCopy(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}
