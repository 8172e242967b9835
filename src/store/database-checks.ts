// What can be wrong with a database file, found without changing it (issue 18): checked at every start before the
// file is opened for writing (a damaged file stops the server with a message naming it, and is left as it was),
// and in full by `abuse-intel doctor`.

import type { Database } from "bun:sqlite";
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { AppError } from "../domain/errors";
import { schemaTables } from "./schema";
import { getTableName } from "drizzle-orm";

const MAGIC = "SQLite format 3\0";

/** A problem with the file itself, found from its header and size (cheap: read at every start), or null. */
export function fileProblem(path: string): string | null {
  if (!existsSync(path)) return null;
  const stats = statSync(path);
  if (stats.isDirectory()) return "it is a directory, not a database file";
  const size = stats.size;
  if (size === 0) return null; // a new database: SQLite writes the header on first use
  if (size < 100) return `it is ${size} bytes long, shorter than a SQLite header (100 bytes): truncated`;
  const header = new Uint8Array(100);
  const fd = openSync(path, "r");
  try {
    readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (new TextDecoder().decode(header.subarray(0, 16)) !== MAGIC) return "its header is not a SQLite database's (overwritten or not a database)";
  const view = new DataView(header.buffer);
  const rawPageSize = view.getUint16(16);
  const pageSize = rawPageSize === 1 ? 65536 : rawPageSize;
  if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0) return `its header gives a page size of ${rawPageSize}, which SQLite never writes: the header is damaged`;
  if (size % pageSize !== 0) return `it is ${size} bytes long, not a whole number of its ${pageSize}-byte pages: truncated or damaged`;
  // The page count in the header is valid when "version-valid-for" equals the change counter.
  const pages = view.getUint32(28);
  // A checkpoint under way (another process's) writes page 1, with the new count, before the pages that extend the
  // file: while the write-ahead log holds frames, a short file is not yet a truncated one.
  if (pages > 0 && view.getUint32(92) === view.getUint32(24) && size < pages * pageSize && !walHasFrames(path)) {
    return `it is ${size} bytes long, but its header counts ${pages} pages of ${pageSize} bytes (${pages * pageSize} bytes): truncated`;
  }
  return null;
}

/** Whether `path`'s write-ahead log holds anything beyond its 32-byte header (a checkpoint may still be copying it). */
function walHasFrames(path: string): boolean {
  const wal = `${path}-wal`;
  return existsSync(wal) && statSync(wal).size > 32;
}

/** The tables the schema has that the database lacks. */
export function missingTables(sqlite: Database): string[] {
  const present = new Set(sqlite.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name));
  return Object.values(schemaTables)
    .map((table) => getTableName(table))
    .filter((name) => !present.has(name));
}

/** SQLite's own check of every page and index: "ok", or the problems it lists (at most `limit`). */
export function integrityProblems(sqlite: Database, limit = 100): string[] {
  const rows = sqlite.query<{ integrity_check: string }, []>(`PRAGMA integrity_check(${Math.max(1, Math.floor(limit))})`).all();
  const lines = rows.map((r) => r.integrity_check);
  return lines.length === 1 && lines[0] === "ok" ? [] : lines;
}

/** Rows whose foreign key points at nothing. */
export function foreignKeyProblems(sqlite: Database): string[] {
  return sqlite
    .query<{ table: string; rowid: number; parent: string }, []>("PRAGMA foreign_key_check")
    .all()
    .map((r) => `${r.table} row ${r.rowid} points at a missing ${r.parent} row`);
}

/** The AppError a start gives for a damaged database: the file, what is wrong, and that it was left as it was. */
export function damagedDatabase(path: string, what: string): AppError {
  return new AppError(
    "internal_error",
    `the database ${path} is damaged: ${what}. It was left as it was; restore it from a backup, or move it aside to start empty (abuse-intel doctor tells more)`,
  );
}

/** Whether an error is SQLite finding a file that is not a database, or a damaged one. */
export function isDamageError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT" || (typeof code === "string" && code.startsWith("SQLITE_CORRUPT"));
}

/** Addresses with counting reports (pending or verified) and no `addresses` row: the index would not know them. */
export function reportedWithoutRow(sqlite: Database, limit = 100): string[] {
  return sqlite
    .query<{ ip: string }, [number]>(
      "SELECT DISTINCT ip FROM reports WHERE status IN ('pending', 'verified') AND ip NOT IN (SELECT ip FROM addresses) LIMIT ?",
    )
    .all(limit)
    .map((r) => r.ip);
}
