// `abuse-intel backup` and `abuse-intel restore` (contract section 16). A backup is one file holding a consistent
// copy of the whole database and the data directory's JWT secret, made while the server runs; restore puts it
// back with the server stopped, after checking it, and changes nothing when it refuses.

import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveConfig } from "../config";
import { AppError } from "../domain/errors";
import { JWT_SECRET_FILE } from "../services/accounts/credentials";
import { checkBackup, restoreBackup, writeBackup } from "../store/backup";
import { databasePath, openStore } from "../store/database";
import { flag, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command } from "./command";
import { claimDataDir, releaseDataDir } from "./data-dir-lock";
import { checkNotTheDatabase, checkOutputPath } from "./output-file";

/** The data directory's files a backup carries besides the database. */
const SECRET_FILES = [JWT_SECRET_FILE];

export const backupCommand: Command = {
  name: "backup",
  summary: "write a consistent copy of the whole database (secrets included), also while the server runs",
  help: [
    "Usage: abuse-intel backup --out FILE [--data-dir DIR]",
    "",
    "Writes one file (mode 0600) with a consistent copy of the whole database, as of one moment, while the server",
    "runs and takes writes: accounts, password hashes, API key hashes, reports, credits, webhooks (with their",
    "secrets), feeds, bouncers, and the data directory's JWT secret. Keep it as safe as the data directory.",
    "Imported enrichment tables (geo/) and snapshots are not in it: re-import or re-export them.",
    DATA_DIR_HELP,
  ].join("\n"),
  async run(argv) {
    const args = parseArgs(argv, { values: ["--data-dir", "--out"] });
    if (args.positionals.length > 0) throw new AppError("bad_request", `backup takes no arguments (got "${args.positionals[0]}")`);
    const out = flag(args, "--out");
    if (out === undefined || out === "") throw new AppError("bad_request", "--out FILE is required");
    const config = resolveConfig(args.flags);
    checkOutputPath(out);
    checkNotTheDatabase(out, config.dataDir);
    if (existsSync(out)) throw new AppError("conflict", `${out} exists: choose another name (a backup never overwrites a file)`);
    if (!existsSync(databasePath(config.dataDir))) throw new AppError("not_found", `no database in ${config.dataDir}`);
    const store = openStore(config.dataDir, { sync: config.syncMode });
    try {
      const files = SECRET_FILES.filter((name) => existsSync(join(config.dataDir, name))).map((name) => ({ name, content: readFileSync(join(config.dataDir, name), "utf8") }));
      const started = performance.now();
      writeBackup(store, out, files);
      console.log(`backup written to ${out} (${statSync(out).size} bytes, ${Math.round(performance.now() - started)} ms)`);
      return 0;
    } finally {
      store.close();
    }
  },
};

export const restoreCommand: Command = {
  name: "restore",
  summary: "put a backup back into a data directory (server stopped), after checking it",
  help: [
    "Usage: abuse-intel restore FILE [--data-dir DIR]",
    "",
    "Checks FILE (its header and size, SQLite's integrity_check, and that this build knows its schema) and puts it",
    "in place as the data directory's database, with its JWT secret; the database it replaces is kept beside it",
    "as abuse-intel.db.before-restore-<time>. The server must be stopped; one started while the restore runs is",
    "refused. A damaged backup, or one made by a newer version, is refused and nothing changes. A backup from an",
    "older version is brought up to date at the next start, as any database is.",
    DATA_DIR_HELP,
  ].join("\n"),
  async run(argv) {
    const args = parseArgs(argv, { values: ["--data-dir"] });
    if (args.positionals.length !== 1) throw new AppError("bad_request", "restore takes one FILE");
    const file = args.positionals[0];
    const config = resolveConfig(args.flags);
    // Held from before the checks to the end, as a server holds it: a server started meanwhile is refused, instead
    // of opening the database this restore is about to rename away under it.
    const created = !existsSync(config.dataDir);
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    let kept: string | null;
    try {
      claimDataDir(config.dataDir, "restore");
      try {
        kept = restoreInto(file, config.dataDir);
      } finally {
        releaseDataDir(config.dataDir);
      }
    } catch (error) {
      // A refused restore changes nothing: not even a directory it made.
      if (created && readdirSync(config.dataDir).length === 0) rmdirSync(config.dataDir);
      throw error;
    }
    console.log(`restored ${file} into ${config.dataDir}${kept ? `; the previous database is kept as ${kept}` : ""}`);
    return 0;
  },
};

/** Checks the backup, then puts it and its secret files in place; the previous database's new name, or null. */
function restoreInto(file: string, dataDir: string): string | null {
  const check = checkBackup(file);
  if (check.problems.length > 0) throw new AppError("bad_request", `${check.problems.join("; ")}. Nothing was changed`);
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const kept = restoreBackup(file, databasePath(dataDir), stamp);
  for (const f of check.files) {
    if (!SECRET_FILES.includes(f.name)) continue;
    const path = join(dataDir, f.name);
    if (existsSync(path)) rmSync(path);
    writeFileSync(path, f.content, { mode: 0o600 });
    chmodSync(path, 0o600);
  }
  // Opened once now: migrations of an older backup run here, and a problem shows before the server starts.
  openStore(dataDir).close();
  return kept;
}
