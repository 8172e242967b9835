// Backups of a data directory (contract section 16): one SQLite file holding a consistent copy of the whole
// database, made while the server runs and takes writes (`VACUUM INTO` reads in one transaction, so the copy is
// one moment of the WAL database), with the data directory's secrets (the JWT secret) in a table of its own.
// Restoring checks the file first (header and size, integrity_check, the schema's migrations) and changes
// nothing when it refuses.

import { Database } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from "node:fs";
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

/** Writes the backup to `out` (mode 0600), through a temporary file renamed when complete. Returns its size. */
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
  const problem = fileProblem(path);
  if (problem !== null) {
    result.problems.push(`${path} is damaged: ${problem}`);
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
