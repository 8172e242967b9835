// Small reads of the database as a whole: whether it answers (readiness), whether another connection committed
// (the change watcher), and the counters SQLite keeps itself (metrics).

import type { Database } from "bun:sqlite";
import type { Store } from "./database";

/** Whether the database answers a query (GET /readyz). */
export function databaseAnswers(store: Pick<Store, "sqlite">): boolean {
  try {
    store.sqlite.query("SELECT 1").get();
    return true;
  } catch {
    return false;
  }
}

/** SQLite's data_version: it changes exactly when another connection has committed since this one last looked. */
export function dataVersion(sqlite: Database): number {
  return sqlite.query<{ data_version: number }, []>("PRAGMA data_version").get()!.data_version;
}
