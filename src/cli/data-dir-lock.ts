// One process at a time owns a data directory: a server, or a restore putting a backup in place. `serve` claims the
// directory before it opens the store, by writing its pid to DATA_DIR/serve.pid, and refuses to start while that
// file names a live process; it removes the file when it stops, or when its start fails, only if the file still
// names it. `restore` claims it the same way (its pid, then "restore") for as long as it runs: checking once for a
// server let one start during a long restore, which then replaced the database under it. Before, a second `serve`
// on the same directory (whose listen then failed) overwrote the first one's pid and left its own, dead, behind:
// `restore` then replaced the database under the running server.

import { existsSync, openSync, readFileSync, rmSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../domain/errors";

/** The file a server writes its pid to while it serves a data directory. */
const SERVER_PID_FILE = "serve.pid";

/** What holds a data directory. */
export type DataDirHolder = "server" | "restore";

interface Holder {
  pid: number;
  what: DataDirHolder;
}

/** The live process named by the pid file at `path`, or null (no pid file, or its process is gone). */
function holderOf(path: string): Holder | null {
  const held = readPidFile(path);
  if (held === null || held.pid === process.pid) return null;
  try {
    process.kill(held.pid, 0);
    return held;
  } catch {
    return null;
  }
}

/** Claims `dataDir` for this process, or throws `conflict` naming the live process that holds it. */
export function claimDataDir(dataDir: string, what: DataDirHolder = "server"): void {
  const path = join(dataDir, SERVER_PID_FILE);
  if (createdPidFile(path, what)) return;
  const holder = holderOf(path);
  if (holder !== null) throw conflict(dataDir, holder, what);
  // A file left by a process that is gone: taken away once; another may have claimed the directory since.
  rmSync(path, { force: true });
  if (!createdPidFile(path, what)) throw conflict(dataDir, holderOf(path), what);
}

function conflict(dataDir: string, holder: Holder | null, claiming: DataDirHolder): AppError {
  const pid = holder === null ? "" : ` (pid ${holder.pid})`;
  if (holder?.what === "restore") return new AppError("conflict", `a restore${pid} is running on ${dataDir}: wait until it is done`);
  if (claiming === "restore") return new AppError("conflict", `a server${pid} is running on ${dataDir}: stop it before restoring`);
  return new AppError("conflict", `a server${pid} is already running on ${dataDir}: one server per data directory`);
}

/** Creates the pid file naming this process, never over one that exists (then returns false). */
function createdPidFile(path: string, what: DataDirHolder): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    // A server's file holds its pid alone, as it always did.
    writeSync(fd, what === "server" ? `${process.pid}\n` : `${process.pid} ${what}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Gives `dataDir` up: removes the pid file if it still names this process. */
export function releaseDataDir(dataDir: string): void {
  const path = join(dataDir, SERVER_PID_FILE);
  if (readPidFile(path)?.pid === process.pid) rmSync(path, { force: true });
}

function readPidFile(path: string): Holder | null {
  if (!existsSync(path)) return null;
  const [first, second] = readFileSync(path, "utf8").trim().split(/\s+/);
  const pid = Number(first);
  return Number.isInteger(pid) && pid > 0 ? { pid, what: second === "restore" ? "restore" : "server" } : null;
}
