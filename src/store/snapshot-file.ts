// Reading a snapshot file (contract section 8): opening it read-only, its rows (addresses, allowlist, the pre-
// built index's blobs, the enrichment range tables) and SQLite's own check of it. The same `addresses` columns
// exist in the main database, so the address readers serve both.

import { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import { AppError } from "../domain/errors";
import { ADDRESS_ROW_COLUMNS, type AddressRow } from "./address-rows";

/** Opens a file as a snapshot (read-only), or fails saying why it is not one. */
export function openSnapshotDatabase(file: string): Database {
  if (!existsSync(file)) throw new AppError("not_found", `${file} does not exist`);
  if (statSync(file).isDirectory()) throw new AppError("bad_request", `${file} is a directory, not a snapshot file`);
  let db: Database;
  try {
    db = new Database(file, { readonly: true });
    db.query("SELECT 1 FROM meta LIMIT 1").get();
  } catch (error) {
    throw new AppError("bad_request", `${file} is not an abuse-intel snapshot: ${(error as Error).message}`);
  }
  return db;
}

/** SQLite's full integrity check with a big page cache (about a second per million addresses): [] when ok. */
export function snapshotIntegrityProblems(db: Database, cacheKib: number): string[] {
  db.exec(`PRAGMA cache_size = ${-cacheKib}`);
  const check = (db.query("PRAGMA integrity_check").all() as Record<string, string>[]).map((r) => Object.values(r)[0]);
  return check.length === 1 && check[0] === "ok" ? [] : check;
}

export interface IndexBlobRow {
  name: string;
  type: string;
  bytes: Uint8Array;
}

export function indexBlobRows(db: Database): IndexBlobRow[] {
  return db.query("SELECT name, type, bytes FROM index_data ORDER BY position").all() as IndexBlobRow[];
}

/** The same rows, a blob a step (the trees' blobs are tens of MiB at a million addresses). */
export function* indexBlobRowsInSteps(db: Database): Generator<void, IndexBlobRow[]> {
  const positions = db.query("SELECT position FROM index_data ORDER BY position").all() as { position: number }[];
  const one = db.query("SELECT name, type, bytes FROM index_data WHERE position = ?");
  const rows: IndexBlobRow[] = [];
  for (const { position } of positions) {
    rows.push(one.get(position) as IndexBlobRow);
    yield;
  }
  return rows;
}

/** The range tables, a table a step. */
export function* rangeTableRowsInSteps(db: Database): Generator<void, { name: string; bytes: Uint8Array }[]> {
  const positions = db.query("SELECT position FROM range_tables ORDER BY position").all() as { position: number }[];
  const one = db.query("SELECT name, bytes FROM range_tables WHERE position = ?");
  const rows: { name: string; bytes: Uint8Array }[] = [];
  for (const { position } of positions) {
    rows.push(one.get(position) as { name: string; bytes: Uint8Array });
    yield;
  }
  return rows;
}

export function rangeTableRows(db: Database): { name: string; bytes: Uint8Array }[] {
  return db.query("SELECT name, bytes FROM range_tables ORDER BY position").all() as { name: string; bytes: Uint8Array }[];
}

export function snapshotAllowlistRows(db: Database): { id: number; cidr: string; createdAt: number }[] {
  return db.query("SELECT id, cidr, created_at AS createdAt FROM allowlist ORDER BY id").all() as { id: number; cidr: string; createdAt: number }[];
}

/** The rows of these addresses, by address. */
export function addressRowsOf(db: Database, ipTexts: readonly string[]): AddressRow[] {
  return db.query(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses WHERE ip IN (SELECT value FROM json_each(?)) ORDER BY ip`).all(JSON.stringify(ipTexts)) as AddressRow[];
}

/** Every address row, by address. */
export function everyAddressRow(db: Database): IterableIterator<AddressRow> {
  return db.query(`SELECT ${ADDRESS_ROW_COLUMNS} FROM addresses ORDER BY ip`).iterate() as IterableIterator<AddressRow>;
}
