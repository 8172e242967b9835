// The files commands write where an operator names them (`backup --out`, `snapshot export --out`, `snapshot keygen
// --out`): a path that cannot be written, or that would replace the data directory's own database, is refused
// before anything is written. Whether an existing file may be replaced is each command's own rule.

import { existsSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { AppError } from "../domain/errors";
import { databasePath } from "../store/database";

/** SQLite keeps a database's recent commits and its lock state beside it, under these suffixes. */
const DATABASE_SIDE_FILES = ["", "-wal", "-shm", "-journal"];

/** Refuses `out` when its directory is missing or it is a directory itself. */
export function checkOutputPath(out: string): void {
  const directory = dirname(out);
  if (!existsSync(directory)) throw new AppError("bad_request", `the directory of ${out} does not exist`);
  if (!statSync(directory).isDirectory()) throw new AppError("bad_request", `${directory} is not a directory, so ${out} cannot be written`);
  if (existsSync(out) && statSync(out).isDirectory()) throw new AppError("bad_request", `${out} is a directory: give a file name`);
}

/**
 * Refuses `out` when it is, under any spelling or link, the data directory's database or one of SQLite's files
 * beside it: a file renamed over them replaces every account and report, and the -wal and -shm files may not exist
 * yet when this runs, so the paths are compared rather than the files.
 */
export function checkNotTheDatabase(out: string, dataDir: string): void {
  if (!existsSync(dataDir)) return;
  const database = databasePath(realpathSync(dataDir));
  const target = resolvedPath(out);
  if (DATABASE_SIDE_FILES.some((suffix) => target === database + suffix)) {
    throw new AppError("bad_request", `${out} is the data directory's own database: write it elsewhere`);
  }
}

function resolvedPath(path: string): string {
  return existsSync(path) ? realpathSync(path) : join(realpathSync(dirname(path)), basename(path));
}
