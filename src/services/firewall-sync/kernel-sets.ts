// What a firewall sync writes to: the kernel's sets, by nft or by ipset. A pulled list goes in through a
// ListIntake (entries as they arrive), and is applied whole by `commit` or dropped by `abandon`, which leave
// the live sets exactly as they were.

import type { EntrySink } from "../../domain/firewall/blocklist-body";
import type { IpVersion } from "../../domain/ip";

export interface Applied {
  entries: number;
  /** Null when the sets' contents before were not known (the first sync of this process, or after a failure). */
  added: number | null;
  removed: number | null;
  /** How: the whole set replaced, only the difference applied, or nothing to do. */
  how: "replaced" | "difference" | "unchanged";
}

export interface ListIntake {
  entry: EntrySink;
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

/** The entries of both families, in the order they came. */
export type FamilySets = Record<IpVersion, Set<string>>;
export const emptyFamilySets = (): FamilySets => ({ 4: new Set(), 6: new Set() });
export const sizeOf = (s: FamilySets): number => s[4].size + s[6].size;

/** How many entries of `from` are not in `inside`. */
export function countMissing(from: FamilySets, inside: FamilySets): number {
  let n = 0;
  for (const v of [4, 6] as const) for (const e of from[v]) if (!inside[v].has(e)) n++;
  return n;
}
