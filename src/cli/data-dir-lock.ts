// One server per data directory: `serve` claims the directory before it opens the store, by writing its pid to
// DATA_DIR/serve.pid, and refuses to start while that file names a live process; it removes the file when it
// stops, or when its start fails, only if the file still names it. `restore` refuses while the file names a live
// process. Before, a second `serve` on the same directory (whose listen then failed) overwrote the first one's pid
// and left its own, dead, behind: `restore` then replaced the database under the running server.

import { existsSync, openSync, readFileSync, rmSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../domain/errors";

/** The file a server writes its pid to while it serves a data directory. */
export const SERVER_PID_FILE = "serve.pid";

/** The pid of a server running on `dataDir`, or null (no pid file, or its process is gone). */
export function runningServerPid(dataDir: string): number | null {
  const pid = pidIn(join(dataDir, SERVER_PID_FILE));
  if (pid === null || pid === process.pid) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

/** Claims `dataDir` for this process, or throws `conflict` naming the live server that holds it. */
export function claimDataDir(dataDir: string): void {
  const path = join(dataDir, SERVER_PID_FILE);
  if (createdPidFile(path)) return;
  const conflict = (pid: number | null) =>
    new AppError("conflict", `a server${pid === null ? "" : ` (pid ${pid})`} is already running on ${dataDir}: one server per data directory`);
  const holder = runningServerPid(dataDir);
  if (holder !== null) throw conflict(holder);
  // A file left by a server that is gone: taken away once; another server may have claimed the directory since.
  rmSync(path, { force: true });
  if (!createdPidFile(path)) throw conflict(runningServerPid(dataDir));
}

/** Creates the pid file with this process's pid, never over one that exists (then returns false). */
function createdPidFile(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Gives `dataDir` up: removes the pid file if it still names this process. */
export function releaseDataDir(dataDir: string): void {
  const path = join(dataDir, SERVER_PID_FILE);
  if (pidIn(path) === process.pid) rmSync(path, { force: true });
}

function pidIn(path: string): number | null {
  if (!existsSync(path)) return null;
  const pid = Number(readFileSync(path, "utf8").trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}
