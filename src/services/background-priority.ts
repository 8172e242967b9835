// Work that runs beside a server answering lookups (a snapshot's export or verification, on a thread or in a
// process of its own) asks for the lowest CPU priority: where it shares a core with the server's event loop, the
// server wins every contended slice, and the work goes on in the time the server leaves idle.

import { setPriority } from "node:os";

/** The calling thread's niceness set to 19 (Linux: one thread; the process's other threads keep theirs). */
export function yieldCpuToServers(): void {
  try {
    setPriority(19);
  } catch {
    // Not permitted, or not supported here: the work runs at the priority it has.
  }
}
