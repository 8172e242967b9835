// Work that runs beside a server answering lookups (a snapshot's export or verification, an import, on a thread or
// in a process of its own) asks for a low CPU priority: where it shares a core with the server's event loop, the
// server gets about nine contended slices in ten, and the work goes on with the tenth and the time the server leaves
// idle. Not the lowest (19): its weight (15 against 1,024) starved the work whenever the cores stayed busy (two
// snapshot runs in a test took over 30 s beside two CPU-bound processes), and a snapshot must still be made on a busy box.

import { readdirSync } from "node:fs";
import { setPriority } from "node:os";

/** Niceness 10: a weight of 110 against the server's 1,024. */
export const BACKGROUND_NICENESS = 10;

/** The calling thread's niceness set to BACKGROUND_NICENESS (Linux: one thread; the process's other threads keep theirs). */
export function yieldCpuToServers(): void {
  try {
    setPriority(BACKGROUND_NICENESS);
  } catch {
    // Not permitted, or not supported here: the work runs at the priority it has.
  }
}

/**
 * Every thread of this process at BACKGROUND_NICENESS, for a process that runs beside a server (`snapshot export`,
 * `import blocklist`): on Linux a niceness belongs to one thread, and the threads the runtime started before this
 * call kept 0 (JSC's heap warm-up thread spent 6 s of CPU at niceness 0 in a 100 k-address export, as much as a
 * third of the command's CPU). Threads started later take the niceness of the thread that starts them.
 */
export function yieldProcessCpuToServers(): void {
  yieldCpuToServers();
  let threads: string[];
  try {
    threads = readdirSync("/proc/self/task");
  } catch {
    return;
  }
  for (const tid of threads) {
    try {
      setPriority(Number(tid), BACKGROUND_NICENESS);
    } catch {
      // Gone meanwhile, or not permitted: the others still are.
    }
  }
}
