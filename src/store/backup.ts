// Backups of a data directory (contract section 16): one SQLite file holding a consistent copy of the whole
// database, made while the server runs and takes writes (`VACUUM INTO` reads in one transaction, so the copy is
// one moment of the WAL database), with the data directory's secrets (the JWT secret) in a table of its own.
// Restoring checks the file first (header and size, its checksum, integrity_check, the schema's migrations) and
// changes nothing when it refuses.
//
// The checksum: the first 8 bytes of the SHA-256 of the whole file, written into two header fields nothing else
// uses (user_version, application_id) and left out of the sum with the two counters that writing them moves. A
// bit flipped inside a row passes SQLite's integrity_check (an argon2 hash, a score); it does not pass this.

import { Database } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, fsyncSync, openSync, readSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { fileProblem, integrityProblems, missingTables } from "./database-checks";
import type { Store } from "./database";
import { embeddedMigrations } from "./migrations.generated";

/** The table of a backup file that carries the data directory's secret files (removed again on restore). */
const FILES_TABLE = "abuse_intel_backup_files";

export interface BackupFile {
  name: string;
  content: string;
}

function fsyncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes the backup to `out` (mode 0600), through a temporary file renamed when complete. */
export function writeBackup(store: Store, out: string, files: readonly BackupFile[]): void {
  const temporary = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    store.sqlite.query("VACUUM INTO ?").run(temporary);
    chmodSync(temporary, 0o600);
    const db = new Database(temporary, { readwrite: true });
    try {
      db.exec(`CREATE TABLE ${FILES_TABLE} (name TEXT PRIMARY KEY, content TEXT NOT NULL)`);
      const insert = db.prepare(`INSERT INTO ${FILES_TABLE} (name, content) VALUES (?, ?)`);
      for (const f of files) insert.run(f.name, f.content);
    } finally {
      db.close();
    }
    stampChecksum(temporary);
    fsyncFile(temporary);
    renameSync(temporary, out);
  } finally {
    rmSync(temporary, { force: true });
  }
}

export interface BackupCheck {
  /** Empty when the file may be restored. */
  problems: string[];
  /** Migrations applied in the file, and how many this build knows. */
  migrations: number;
  files: BackupFile[];
}

/** Checks a backup without changing it: the file, SQLite's integrity, the tables, and that this build knows its schema. */
export function checkBackup(path: string): BackupCheck {
  const result: BackupCheck = { problems: [], migrations: 0, files: [] };
  if (!existsSync(path)) {
    result.problems.push(`${path} does not exist`);
    return result;
  }
  if (statSync(path).isDirectory()) {
    result.problems.push(`${path} is a directory, not a backup file`);
    return result;
  }
  const problem = fileProblem(path);
  if (problem !== null) {
    result.problems.push(`${path} is damaged: ${problem}`);
    return result;
  }
  if (checksumMismatch(path)) {
    result.problems.push(`${path} is damaged: its content does not match the checksum written when it was made`);
    return result;
  }
  let db: Database | null = null;
  try {
    db = new Database(path, { readonly: true });
    const integrity = integrityProblems(db, 10);
    if (integrity.length > 0) {
      result.problems.push(`${path} is damaged: SQLite's integrity_check says ${integrity.slice(0, 3).join("; ")}`);
      return result;
    }
    const tables = new Set(db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name));
    if (!tables.has("__drizzle_migrations") || !tables.has(FILES_TABLE)) {
      result.problems.push(`${path} is not an abuse-intel backup (made by \`abuse-intel backup\`)`);
      return result;
    }
    const known = new Set(embeddedMigrations.map((m) => m.hash));
    const applied = db.query<{ hash: string }, []>("SELECT hash FROM __drizzle_migrations").all();
    result.migrations = applied.length;
    const unknown = applied.filter((m) => !known.has(m.hash));
    if (unknown.length > 0) {
      result.problems.push(`${path} was made by a newer version of abuse-intel (${unknown.length} schema change${unknown.length > 1 ? "s" : ""} this build does not know): restore it with that version`);
      return result;
    }
    if (applied.length === embeddedMigrations.length) {
      const missing = missingTables(db);
      if (missing.length > 0) result.problems.push(`${path} lacks the table${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
    }
    result.files = db.query<BackupFile, []>(`SELECT name, content FROM ${FILES_TABLE} ORDER BY name`).all();
  } catch (error) {
    result.problems.push(`${path} cannot be read as a backup: ${(error as Error).message}`);
  } finally {
    db?.close();
  }
  return result;
}

/**
 * Puts a checked backup in place as `databasePath`: copied beside it, the secrets table dropped, synced, then
 * renamed over it. The database it replaces (with its -wal and -shm) is kept as `<name>.before-restore-<stamp>`.
 * Returns where the previous database went, or null when there was none.
 */
export function restoreBackup(backupPath: string, databasePath: string, stamp: string): string | null {
  const temporary = `${databasePath}.restoring`;
  rmSync(temporary, { force: true });
  // A copy through SQLite (not the bytes): the result is a plain database file in rollback-journal mode.
  const source = new Database(backupPath, { readonly: true });
  try {
    source.query("VACUUM INTO ?").run(temporary);
  } finally {
    source.close();
  }
  const db = new Database(temporary, { readwrite: true });
  try {
    db.exec(`DROP TABLE ${FILES_TABLE}`);
    db.exec("PRAGMA user_version = 0; PRAGMA application_id = 0");
  } finally {
    db.close();
  }
  chmodSync(temporary, 0o600);
  fsyncFile(temporary);
  let kept: string | null = null;
  if (existsSync(databasePath)) {
    kept = `${databasePath}.before-restore-${stamp}`;
    renameSync(databasePath, kept);
    for (const suffix of ["-wal", "-shm"]) if (existsSync(databasePath + suffix)) renameSync(databasePath + suffix, kept + suffix);
  }
  renameSync(temporary, databasePath);
  return kept;
}

// ---- the checksum ----

/** Header fields left out of the sum (offsets): change counter, user_version, application_id, version-valid-for, SQLite version. */
const UNSUMMED_FIELDS = [24, 60, 68, 92, 96];

/** A checksum: two int32, the first 8 bytes of a SHA-256, as the header's user_version and application_id hold it. */
type Checksum = readonly [number, number];

/**
 * One read of the file at `path`: the checksum its header records (null when none: a backup made before there was
 * one) and the one its content gives (its SHA-256 with the unsummed fields as zeros).
 */
function checksumsOf(path: string): { recorded: Checksum | null; computed: Checksum } {
  const hasher = new Bun.CryptoHasher("sha256");
  const chunk = Buffer.alloc(1 << 20);
  let recorded: Checksum | null = null;
  const fd = openSync(path, "r");
  try {
    for (let position = 0; ; ) {
      const n = readSync(fd, chunk, 0, chunk.length, position);
      if (n === 0) break;
      if (position === 0) {
        if (n >= 72) recorded = [chunk.readInt32BE(60), chunk.readInt32BE(68)];
        for (const at of UNSUMMED_FIELDS) if (at + 4 <= n) chunk.fill(0, at, at + 4);
      }
      hasher.update(chunk.subarray(0, n));
      position += n;
    }
  } finally {
    closeSync(fd);
  }
  const digest = hasher.digest() as Buffer;
  return { recorded: recorded !== null && (recorded[0] !== 0 || recorded[1] !== 0) ? recorded : null, computed: [digest.readInt32BE(0), digest.readInt32BE(4)] };
}

/** Writes the file's checksum into its header (the fields it leaves out). */
export function stampChecksum(path: string): void {
  const [high, low] = checksumsOf(path).computed;
  const db = new Database(path, { readwrite: true });
  try {
    db.exec(`PRAGMA user_version = ${high}; PRAGMA application_id = ${low}`);
  } finally {
    db.close();
  }
}

/** Whether the file records a checksum its content does not give. */
function checksumMismatch(path: string): boolean {
  const { recorded, computed } = checksumsOf(path);
  return recorded !== null && (recorded[0] !== computed[0] || recorded[1] !== computed[1]);
}
