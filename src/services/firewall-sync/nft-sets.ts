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
import { changesOf, entryDifference, EntryList } from "../../domain/firewall/entry-list";
import { type NftNames, nftDifferenceScript, nftReplaceScript } from "../../domain/firewall/nft-script";
import type { Applied, KernelSets, ListIntake } from "./kernel-sets";
import { ToolProcess } from "./tool-process";

/** Above this many entries held, a whole replace is faster than a difference with nft 1.0.6 (measured). */
export const NFT_DIFFERENCE_LIMIT = 50_000;

export class NftSets implements KernelSets {
  /** What the sets hold, when this process knows it. */
  private held: EntryList | null = null;

  constructor(
    private readonly names: NftNames,
    private readonly nft = "nft",
    private readonly differenceLimit = NFT_DIFFERENCE_LIMIT,
  ) {}

  begin(): ListIntake {
    const next = new EntryList();
    return {
      ipv4: (value, prefixLength) => next.ipv4(value, prefixLength),
      ipv6: (text) => next.ipv6(text),
      afterChunk: async () => {},
      commit: (entries) => this.commit(next, entries),
      abandon: async () => {},
    };
  }

  private async commit(next: EntryList, entries: number): Promise<Applied> {
    const held = this.held;
    this.held = null;
    const difference = held === null ? null : entryDifference(held, next);
    const changes = difference === null ? { added: null, removed: null } : changesOf(difference);
    if (difference !== null && (changes.added ?? 0) + (changes.removed ?? 0) === 0) {
      this.held = next;
      return { entries, ...changes, how: "unchanged" };
    }
    if (difference !== null && (held as EntryList).size <= this.differenceLimit) {
      try {
        await this.run(nftDifferenceScript(this.names, held as EntryList, next, difference));
        this.held = next;
        return { entries, ...changes, how: "difference" };
      } catch {
        // The sets do not hold what this process wrote (someone changed them): the transaction changed nothing,
        // and a whole replace puts them right.
      }
    }
    await this.run(nftReplaceScript(this.names, next));
    this.held = next;
    return { entries, ...changes, how: "replaced" };
  }

  /**
   * Runs a script from a private file, not a pipe: `nft -f -` would commit a script cut short by this process
   * dying (an end of input between statements is a valid script), and a cut replacement empties the sets.
   */
  private async run(script: Iterable<Uint8Array>): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), "abuse-intel-nft-"));
    const file = join(dir, "sync.nft");
    try {
      const fd = openSync(file, "w", 0o600);
      try {
        for (const piece of script) writeSync(fd, piece);
      } finally {
        closeSync(fd);
      }
      await ToolProcess.start([this.nft, "-f", file]).finish();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
