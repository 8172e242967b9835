// What a firewall sync writes to: the kernel's sets, by nft or by ipset. A pulled list goes in through a
// ListIntake (entries as they arrive), and is applied whole by `commit` or dropped by `abandon`, which leave
// the live sets exactly as they were.

import type { EntrySink } from "../../domain/firewall/blocklist-body";

export interface Applied {
  entries: number;
  /** Null when the sets' contents before were not known (the first sync of this process, or after a failure). */
  added: number | null;
  removed: number | null;
  /** How: the whole set replaced, only the difference applied, or nothing to do. */
  how: "replaced" | "difference" | "unchanged";
}

export interface ListIntake extends EntrySink {
  /** Awaited after each piece of the body. */
  afterChunk(): Promise<void>;
  /** The list was complete: puts it in the live sets in one step, or throws and leaves them as they were. */
  commit(entries: number): Promise<Applied>;
  /** The list was not complete: nothing of it reaches the live sets. */
  abandon(): Promise<void>;
}

export interface KernelSets {
  begin(): ListIntake;
}
