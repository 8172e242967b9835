// The decision cursors of the bouncers pulling from a read-only edge (contract 14: a cursor survives restarts),
// in their own small database in <data-dir>/edge/: the edge has no database of its own, and the snapshots it
// swaps in are read-only and replaced, while a bouncer's cursor must outlive them all.

import { Database } from "bun:sqlite";
import { CURSOR_COLUMNS, type CursorColumns, type CursorRow, cursorColumns, cursorOfColumns } from "./bouncers";

export class EdgeCursorFile {
  private readonly db: Database;
  private readonly stmt;

  constructor(path: string) {
    this.db = new Database(path, { create: true, readwrite: true });
    // Durable like the server's own cursors: a cursor older than what the bouncer holds would never delete what
    // was sent after it and has left the list since.
    this.db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL");
    this.db.exec(
      "CREATE TABLE IF NOT EXISTS decision_cursors (cursor_key TEXT PRIMARY KEY, last_pull_at INTEGER NOT NULL, ids BLOB NOT NULL, sent_at BLOB NOT NULL, v6_values TEXT NOT NULL)",
    );
    this.stmt = {
      get: this.db.prepare<CursorColumns, [string]>(
        `SELECT ${CURSOR_COLUMNS} FROM decision_cursors WHERE cursor_key = ?`,
      ),
      set: this.db.prepare<unknown, [string, number, Uint8Array, Uint8Array, string]>(
        "INSERT OR REPLACE INTO decision_cursors (cursor_key, last_pull_at, ids, sent_at, v6_values) VALUES (?, ?, ?, ?, ?)",
      ),
    };
  }

  get(key: string): CursorRow | undefined {
    const row = this.stmt.get.get(key);
    return row ? cursorOfColumns(row) : undefined;
  }

  set(key: string, cursor: CursorRow): void {
    const c = cursorColumns(cursor);
    this.stmt.set.run(key, c.lastPullAt, c.ids, c.sentAt, c.v6Values);
  }

  close(): void {
    this.db.close();
  }
}
