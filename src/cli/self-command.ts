// Running this program's own commands as a child process: the compiled executable runs itself, and under Bun
// (development, tests) Bun runs src/main.ts. Used to keep long, CPU-bound work (a snapshot's verification) off
// the event loop of a server that must keep answering.

import { basename, join } from "node:path";

const MAIN = join(import.meta.dir, "../main.ts");

/** The argv that runs `abuse-intel <args>` as a child process. */
export function selfCommand(args: string[]): string[] {
  const runtime = basename(process.execPath);
  return runtime === "bun" || runtime === "bun.exe" ? [process.execPath, MAIN, ...args] : [process.execPath, ...args];
}
