// Where the `addresses` table stands, for an index persisted beside the database (DATA_DIR/index.bin): the last
// change-log sequence number (AUTOINCREMENT never reuses one, so it names one state of the table within one
// history) and a random token written into `meta` each time a file is written. A database holding the token has
// passed through the state the file was taken at: a restored backup taken before that write, another
// database, or a copy from elsewhere lacks it, and the file is then not used.

import { randomUUID } from "node:crypto";
import type { Store } from "./database";

const INDEX_FILE_TOKEN_KEY = "index_file_token";

/**
 * A state of the `addresses` table: the token of the database's last index file, the change log's position, and
 * the last migration applied (a migration may rebuild tables, the change log's numbering included).
 */
export interface AddressGeneration {
  token: string | null;
  seq: number;
  schema: string;
}

function lastMigration(store: Pick<Store, "sqlite">): string {
  const row = store.sqlite.query("SELECT hash FROM __drizzle_migrations ORDER BY created_at DESC, rowid DESC LIMIT 1").get() as { hash: string } | null;
  return row?.hash ?? "";
}

/** The change log's last sequence number ever handed out (0 before the first change). */
export function lastChangeSeq(store: Pick<Store, "sqlite">): number {
  const row = store.sqlite.query("SELECT seq FROM sqlite_sequence WHERE name = 'address_change_log'").get() as { seq: number } | null;
  return row?.seq ?? 0;
}

/** The store's generation now (call inside a transaction to pair it with what else is read there). */
export function addressGeneration(store: Pick<Store, "sqlite">): AddressGeneration {
  const row = store.sqlite.query("SELECT value FROM meta WHERE key = ?").get(INDEX_FILE_TOKEN_KEY) as { value: string } | null;
  return { token: row?.value ?? null, seq: lastChangeSeq(store), schema: lastMigration(store) };
}

/**
 * Takes the write lock, runs `capture` (which brings the index up to the table and copies it out), and
 * records a new token for the file about to be written. No other writer runs meanwhile, so what `capture` saw
 * is the table at the returned sequence number.
 */
export function stampIndexGeneration<T>(store: Store, capture: () => T): { generation: AddressGeneration & { token: string }; captured: T } {
  return store.sqlite
    .transaction(() => {
      const seq = lastChangeSeq(store);
      const captured = capture();
      const token = randomUUID();
      store.sqlite.query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(INDEX_FILE_TOKEN_KEY, token);
      return { generation: { token, seq, schema: lastMigration(store) }, captured };
    })
    .immediate();
}

/** Whether every change logged after `fromSeq` up to `toSeq` is still in the log (none pruned), so it can be replayed. */
export function changeLogHolds(store: Pick<Store, "sqlite">, fromSeq: number, toSeq: number): boolean {
  if (toSeq <= fromSeq) return toSeq === fromSeq;
  const row = store.sqlite.query("SELECT count(*) AS n FROM address_change_log WHERE seq > ? AND seq <= ?").get(fromSeq, toSeq) as { n: number };
  return row.n === toSeq - fromSeq;
}

/** How many `addresses` rows there are. */
export function addressRowCount(store: Pick<Store, "sqlite">): number {
  return (store.sqlite.query("SELECT count(*) AS n FROM addresses").get() as { n: number }).n;
}
