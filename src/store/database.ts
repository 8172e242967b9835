// Opens the one SQLite database of a data directory: WAL, busy timeout, foreign keys, and the embedded
// migrations applied before anything else touches it.

import { damagedDatabase, fileProblem, isDamageError, missingTables } from "./database-checks";
import { Database } from "bun:sqlite";
import { AppError } from "../domain/errors";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import * as schema from "./schema";
import { embeddedMigrations } from "./migrations.generated";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

export const DATABASE_FILE = "abuse-intel.db";

export interface Store {
  /** drizzle over the connection, for everything but the hottest statements. */
  db: Db;
  /** The raw bun:sqlite connection, for prepared hot-path statements and transactions. */
  sqlite: Database;
  path: string;
  close(): void;
}

export function databasePath(dataDir: string): string {
  return join(dataDir, DATABASE_FILE);
}

export interface StoreOptions {
  readonly?: boolean;
  /** `full` (default): a commit survives power loss. `normal`: it survives a process crash only. */
  sync?: "full" | "normal";
  /**
   * How long a write waits for another process's write lock (default 5000 ms). bun:sqlite waits
   * synchronously, so the server uses a short wait and retries or answers 503 `busy` instead of freezing its
   * event loop while a CLI command writes.
   */
  busyTimeoutMs?: number;
}

/** The server's wait for a lock another process holds (see StoreOptions.busyTimeoutMs). */
export const SERVER_BUSY_TIMEOUT_MS = 200;

/** Another process (a CLI import, a job run by hand) holds the database's write lock: try again shortly. */
export function busyError(): AppError {
  return new AppError("busy", "The database is busy with another process's write; try again in a moment", { headers: { "retry-after": "1" } });
}

/** Whether an error is SQLite's "another connection holds the lock". */
export function isBusyError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_") || code === "SQLITE_LOCKED");
}

/** The disk under the data directory is full: the write was rolled back; the server keeps running. */
export function diskFullError(): AppError {
  return new DiskFullError();
}

class DiskFullError extends AppError {
  constructor() {
    super("busy", "The disk holding the data directory is full: nothing was stored. Free some space and try again", { headers: { "retry-after": "30" } });
  }
}

/**
 * Whether an error is SQLite's "database or disk is full" (or a write that failed for want of space), or the
 * AppError made of one (diskFullError).
 */
export function isDiskFullError(error: unknown): boolean {
  if (error instanceof DiskFullError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_FULL" || (typeof code === "string" && code.startsWith("SQLITE_IOERR") && /no space|disk is full|ENOSPC/i.test(String((error as Error).message)));
}

/** The AppError of a storage failure a client can do something about (busy, full), or null for any other error. */
export function storageError(error: unknown): AppError | null {
  if (isBusyError(error)) return busyError();
  if (isDiskFullError(error)) return diskFullError();
  return null;
}

export function openStore(dataDir: string, options: StoreOptions = {}): Store {
  // The directory holds the JWT secret and the first credentials: only its owner may read it.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = databasePath(dataDir);
  // Checked before SQLite opens the file for writing: a damaged file stops the start and is left as it was.
  const problem = fileProblem(path);
  if (problem !== null) throw damagedDatabase(path, problem);
  let sqlite: Database | null = null;
  try {
    sqlite = new Database(path, options.readonly ? { readonly: true } : { create: true, readwrite: true });
    applyPragmas(sqlite, options.readonly ?? false, options.sync ?? "full", options.busyTimeoutMs ?? 5000);
    const db = drizzle({ client: sqlite, schema }) as Db;
    if (!options.readonly) migrate(db, sqlite);
    const missing = options.readonly ? [] : missingTables(sqlite);
    if (missing.length > 0) throw damagedDatabase(path, `the table${missing.length > 1 ? "s" : ""} ${missing.join(", ")} ${missing.length > 1 ? "are" : "is"} missing`);
    const opened = sqlite;
    return { db, sqlite: opened, path, close: () => opened.close() };
  } catch (error) {
    sqlite?.close();
    if (isDamageError(error)) throw damagedDatabase(path, (error as Error).message);
    throw error;
  }
}

/** An in-memory store for tests that need no file. */
export function openMemoryStore(): Store {
  const sqlite = new Database(":memory:");
  applyPragmas(sqlite, false, "normal", 5000);
  const db = drizzle({ client: sqlite, schema }) as Db;
  migrate(db, sqlite);
  return { db, sqlite, path: ":memory:", close: () => sqlite.close() };
}

function applyPragmas(sqlite: Database, readonly: boolean, sync: "full" | "normal", busyTimeoutMs: number): void {
  sqlite.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  if (!readonly) {
    sqlite.exec("PRAGMA journal_mode = WAL");
    // NORMAL in WAL mode keeps every commit atomic and durable against a process crash; only an OS crash or
    // power loss can lose the last transactions. FULL (the default) also survives that: appliances lose power.
    sqlite.exec(`PRAGMA synchronous = ${sync === "normal" ? "NORMAL" : "FULL"}`);
  }
  sqlite.exec("PRAGMA foreign_keys = ON");
  // The triggers on `reports` (migration 0006) make every insert a multi-write statement, which keeps a statement
  // journal: in a temporary file by default, 47 µs of CPU per report; in memory, 11 (docs/decisions.md).
  sqlite.exec("PRAGMA temp_store = MEMORY");
}

/**
 * Applies the embedded drizzle migrations. Foreign keys are off while they run: drizzle-kit's table-rebuild
 * migrations would otherwise cascade-delete child rows (drizzle-orm issue 4640); the check afterwards fails
 * loudly instead.
 */
function migrate(db: Db, sqlite: Database): void {
  sqlite.exec("PRAGMA foreign_keys = OFF");
  try {
    // The same call the stock bun-sqlite migrator makes, fed from strings instead of files.
    (db as unknown as { dialect: { migrate(m: unknown, s: unknown, c: unknown): void }; session: unknown }).dialect.migrate(
      embeddedMigrations.map(({ sql, bps, folderMillis, hash }) => ({ sql, bps, folderMillis, hash })),
      (db as unknown as { session: unknown }).session,
      {},
    );
    const problems = sqlite.query("PRAGMA foreign_key_check").all();
    if (problems.length > 0) throw new Error(`migration left ${problems.length} broken foreign keys`);
  } finally {
    sqlite.exec("PRAGMA foreign_keys = ON");
  }
}

/** Runs `work` in one (deferred) read transaction, so everything it reads belongs to one moment. */
export function inReadTransaction<T>(store: Pick<Store, "sqlite">, work: () => T): T {
  return store.sqlite.transaction(work)();
}

/**
 * Runs `work` in one IMMEDIATE transaction (the write lock is taken at BEGIN, so two writers never deadlock
 * upgrading a read lock). Everything a response acknowledges is committed when this returns.
 */
export function inTransaction<T>(store: Store, work: () => T): T {
  return store.sqlite.transaction(work).immediate();
}

/**
 * Runs `work` in one IMMEDIATE transaction like inTransaction, but does not wait for another process's write lock:
 * SQLite's busy error is thrown at once, for the caller to try again later. bun:sqlite waits for a lock
 * synchronously, so waiting would hold every request of the server for the busy timeout.
 */
export function inTransactionIfUnlocked<T>(store: Store, work: () => T): T {
  return withoutBusyWait(store.sqlite, () => inTransaction(store, work));
}

/**
 * Runs `work` (housekeeping writes: trimming a log, flushing counts) only if the write lock is free now, with no
 * busy wait: another process holding it (an import, for seconds) would otherwise hold the event loop for the
 * whole busy timeout at every tick. Returns false when the lock was taken: nothing was written, try again later.
 */
export function writeIfUnlocked(store: Store, work: () => void): boolean {
  return unlessLocked(store, () => (work(), true)) ?? false;
}

/** What `work` returns, run with no busy wait; null, with nothing written, when another process holds the lock. */
export function unlessLocked<T>(store: Store, work: () => T): T | null {
  try {
    return withoutBusyWait(store.sqlite, work);
  } catch (error) {
    if (isBusyError(error)) return null;
    throw error;
  }
}

/**
 * Whether another connection holds the write lock now, asked without waiting (an empty IMMEDIATE transaction,
 * rolled back). Call with no transaction of this connection open.
 */
export function writeLockHeldElsewhere(store: Store): boolean {
  try {
    withoutBusyWait(store.sqlite, () => store.sqlite.exec("BEGIN IMMEDIATE"));
  } catch (error) {
    if (isBusyError(error)) return true;
    throw error;
  }
  store.sqlite.exec("ROLLBACK");
  return false;
}

/** Runs `work` with the connection's busy timeout at 0, then puts the timeout back. */
function withoutBusyWait<T>(sqlite: Database, work: () => T): T {
  const { timeout } = sqlite.query("PRAGMA busy_timeout").get() as { timeout: number };
  sqlite.exec("PRAGMA busy_timeout = 0");
  try {
    return work();
  } finally {
    sqlite.exec(`PRAGMA busy_timeout = ${timeout}`);
  }
}
