// Whether another connection holds a database's write lock, asked without waiting: for tests that time something
// to happen while another process (a CLI command) is inside its transaction.

import type { Database } from "bun:sqlite";

/** True while another connection holds the write lock; `db` must have a busy timeout of 0 (the default). */
export function writeLocked(db: Database): boolean {
  try {
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
    return false;
  } catch (error) {
    if (String((error as { code?: string }).code).startsWith("SQLITE_BUSY")) return true;
    throw error;
  }
}

/** Waits until another connection holds the write lock steadily (three looks in a row), not for a short write. */
export async function untilWriteLockHeld(db: Database, holder = "the CLI", timeoutMs = 15_000): Promise<void> {
  let held = 0;
  const deadline = Date.now() + timeoutMs;
  while (held < 3) {
    if (Date.now() > deadline) throw new Error(`${holder} never took the write lock`);
    held = writeLocked(db) ? held + 1 : 0;
    await Bun.sleep(15);
  }
}
