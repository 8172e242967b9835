// The nftables side of a firewall sync (contract 19): `table inet TABLE` with the interval sets SET and SET6,
// changed by one `nft -f` transaction per sync. While this process knows what the sets hold (it wrote them last)
// and they are small, only the difference is applied (`delete element` + `create element`, which fail as a whole
// if the sets were changed by someone else; a full replace follows at once). Otherwise the sets are flushed and
// refilled in one transaction: nft 1.0.6 reads an interval set back from the kernel before it changes any element
// of it, at a cost that grows faster than the set, but not when the transaction flushes it first, so at large
// sizes a whole replace is the faster way (docs/decisions.md, "Firewall sync").

import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type NftNames, nftDifferenceScript, nftReplaceScript } from "../../domain/firewall/nft-script";
import { setDifference } from "../../domain/firewall/set-difference";
import type { IpVersion } from "../../domain/ip";
import { type Applied, countMissing, emptyFamilySets, type FamilySets, type KernelSets, type ListIntake, sizeOf } from "./kernel-sets";
import { ToolProcess } from "./tool-process";

/** Above this many entries held, a whole replace is faster than a difference with nft 1.0.6 (measured). */
export const NFT_DIFFERENCE_LIMIT = 50_000;

export class NftSets implements KernelSets {
  /** What the sets hold, when this process knows it. */
  private held: FamilySets | null = null;

  constructor(
    private readonly names: NftNames,
    private readonly nft = "nft",
    private readonly differenceLimit = NFT_DIFFERENCE_LIMIT,
  ) {}

  begin(): ListIntake {
    const next = emptyFamilySets();
    return {
      entry: (v, e) => void next[v].add(e),
      afterChunk: async () => {},
      commit: (entries) => this.commit(next, entries),
      abandon: async () => {},
    };
  }

  private async commit(next: FamilySets, entries: number): Promise<Applied> {
    const held = this.held;
    this.held = null;
    if (held !== null && sizeOf(held) <= this.differenceLimit) {
      const d4 = setDifference(held[4], next[4]);
      const d6 = setDifference(held[6], next[6]);
      const added = d4.added.length + d6.added.length;
      const removed = d4.removed.length + d6.removed.length;
      if (added + removed === 0) {
        this.held = next;
        return { entries, added, removed, how: "unchanged" };
      }
      try {
        await this.run(nftDifferenceScript(this.names, { 4: d4.added, 6: d6.added }, { 4: d4.removed, 6: d6.removed }));
        this.held = next;
        return { entries, added, removed, how: "difference" };
      } catch {
        // The sets do not hold what this process wrote (someone changed them): the transaction changed nothing,
        // and a whole replace puts them right.
      }
    }
    await this.run(nftReplaceScript(this.names, { 4: [...next[4]], 6: [...next[6]] } as Record<IpVersion, string[]>));
    this.held = next;
    if (held === null) return { entries, added: null, removed: null, how: "replaced" };
    const added = countMissing(next, held);
    return { entries, added, removed: countMissing(held, next), how: "replaced" };
  }

  /**
   * Runs a script from a private file, not a pipe: `nft -f -` would commit a script cut short by this process
   * dying (an end of input between statements is a valid script), and a cut replacement empties the sets.
   */
  private async run(script: Iterable<string>): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), "abuse-intel-nft-"));
    const file = join(dir, "sync.nft");
    try {
      const fd = openSync(file, "w", 0o600);
      try {
        for (const piece of script) writeSync(fd, piece);
      } finally {
        closeSync(fd);
      }
      const tool = ToolProcess.start([this.nft, "-f", file]);
      await tool.finish();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
