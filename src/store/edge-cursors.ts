// The decision cursors of the bouncers pulling from a read-only edge (contract 14: a cursor survives restarts),
// and the journal of the lists they follow,
// in their own small database in <data-dir>/edge/: the edge has no database of its own, and the snapshots it
// swaps in are read-only and replaced, while a bouncer's cursor must outlive them all.

import { Database } from "bun:sqlite";
import { DecisionJournalTables } from "./decision-journal";
import { CURSOR_COLUMNS, type CursorColumns, type CursorLimits, type CursorRow, cursorColumns, cursorOfColumns } from "./bouncers";

export class EdgeCursorFile {
  private readonly db: Database;
  /** The journals of the lists pulled from this edge, beside the cursors that name their sequence numbers. */
  readonly journal: DecisionJournalTables;
  private readonly stmt;

  constructor(path: string) {
    this.db = new Database(path, { create: true, readwrite: true });
    // Durable like the server's own cursors: a cursor older than what the bouncer holds would never delete what
    // was sent after it and has left the list since.
    this.db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL");
    this.db.exec(
      "CREATE TABLE IF NOT EXISTS decision_cursors (cursor_key TEXT PRIMARY KEY, last_pull_at INTEGER NOT NULL, ids BLOB NOT NULL, sent_at BLOB NOT NULL, v6_values TEXT NOT NULL)",
    );
    // Files written before the journal lack its columns (their cursors are read as legacy ones, once).
    const columns = new Set(this.db.query<{ name: string }, []>("PRAGMA table_info(decision_cursors)").all().map((c) => c.name));
    for (const [name, type] of [["filter_key", "TEXT"], ["seq", "INTEGER"], ["refresh_queue", "TEXT"]]) {
      if (!columns.has(name)) this.db.exec(`ALTER TABLE decision_cursors ADD COLUMN ${name} ${type}`);
    }
    this.journal = new DecisionJournalTables(this.db, true);
    this.stmt = {
      get: this.db.prepare<CursorColumns, [string]>(
        `SELECT ${CURSOR_COLUMNS} FROM decision_cursors WHERE cursor_key = ?`,
      ),
      set: this.db.prepare<unknown, [string, number, string | null, number, string]>(
        "INSERT OR REPLACE INTO decision_cursors (cursor_key, last_pull_at, ids, sent_at, v6_values, filter_key, seq, refresh_queue) VALUES (?, ?, x'', x'', '{}', ?, ?, ?)",
      ),
      dropIdle: this.db.prepare<unknown, [number]>("DELETE FROM decision_cursors WHERE last_pull_at <= ?"),
      // An owner's keys are those from `owner|` up to `owner}` ("}" follows "|"; an owner has no "|" in it). The
      // most recently saved come by rowid (INSERT OR REPLACE gives a saved row a new one), not by last_pull_at,
      // which a clock stepped back would disorder.
      dropOthersBeyond: this.db.prepare<unknown, [string, string, string, number]>(
        `DELETE FROM decision_cursors WHERE cursor_key >= ?1 AND cursor_key < ?2 AND cursor_key <> ?3 AND cursor_key NOT IN (
           SELECT cursor_key FROM decision_cursors WHERE cursor_key >= ?1 AND cursor_key < ?2 AND cursor_key <> ?3 ORDER BY rowid DESC LIMIT ?4)`,
      ),
    };
  }

  get(owner: string, client: string): CursorRow | undefined {
    const row = this.stmt.get.get(cursorKey(owner, client));
    return row ? cursorOfColumns(row) : undefined;
  }

  /** Saves `client`'s cursor, dropping the owner's others beyond the limit and every idle cursor. */
  save(owner: string, client: string, cursor: CursorRow, limits: CursorLimits): void {
    const key = cursorKey(owner, client);
    const c = cursorColumns(cursor);
    this.db.transaction(() => {
      this.stmt.dropIdle.run(limits.idleSince);
      this.stmt.dropOthersBeyond.run(`${owner}|`, `${owner}}`, key, limits.perOwner - 1);
      this.stmt.set.run(key, c.lastPullAt, c.filterKey, c.seq, c.refreshQueue);
    })();
  }

  close(): void {
    this.db.close();
  }
}

/** A row's key, as files written before the limits have them. */
const cursorKey = (owner: string, client: string) => `${owner}|${client}`;
