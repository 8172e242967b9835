// Work that runs beside a server answering lookups (a snapshot's export or verification, on a thread or in a
// process of its own) asks for a low CPU priority: where it shares a core with the server's event loop, the server
// gets about nine contended slices in ten, and the work goes on with the tenth and the time the server leaves idle.
// Not the lowest (19): its weight (15 against 1,024) starved the work whenever the cores stayed busy (two snapshot
// runs in a test took over 30 s beside two CPU-bound processes), and a snapshot must still be made on a busy box.

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
