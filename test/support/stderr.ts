// What the process writes to stderr while `work` runs (the access log), kept from the terminal.

import { spyOn } from "bun:test";

export async function writtenToStderr(work: () => Promise<void>): Promise<string[]> {
  const written: string[] = [];
  const spy = spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return written;
}
