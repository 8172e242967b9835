// The ipset side of a firewall sync (contract 19): hash:net sets SET and SET6. The download is streamed into one
// `ipset restore` that fills the staging sets SET.next and SET6.next as entries arrive; only once the list is
// known to be complete are the swap and destroy lines written, so a cut download (or this process dying) leaves
// the live sets as they were and the staging sets to be emptied by the next sync. IPv4 neighbours go in as one
// CIDR block.

import { Ipv4CidrAggregator } from "../../domain/aggregate";
import { ChunkWriter } from "../../domain/blocklist/chunk-writer";
import { changesOf, entryDifference, EntryList } from "../../domain/firewall/entry-list";
import { ipsetAddPrefix, type IpsetNames, ipsetStagingLines, ipsetSwapLines, liveSetCreateArgs, stagingName } from "../../domain/firewall/ipset-script";
import type { KernelSets, ListIntake } from "./kernel-sets";
import { oneLine, runTool, ToolProcess } from "./tool-process";

/** Bytes of `add` lines gathered before they are written to ipset's stdin. */
const WRITE_BATCH = 256 * 1024;

export class IpsetSets implements KernelSets {
  private held: EntryList | null = null;

  constructor(
    private readonly names: IpsetNames,
    private readonly ipset = "ipset",
  ) {}

  begin(): ListIntake {
    const next = new EntryList();
    const prefix4 = ipsetAddPrefix(this.names, 4);
    const prefix6 = ipsetAddPrefix(this.names, 6);
    const out = new ChunkWriter(WRITE_BATCH);
    // IPv4 entries go in as the fewest CIDR blocks (neighbours joined): each element costs ipset the same.
    const blocks = new Ipv4CidrAggregator((network, prefixLength) => {
      out.ascii(prefix4);
      out.ipv4(network);
      if (prefixLength !== 32) {
        out.byte(47);
        out.uint(prefixLength);
      }
      out.byte(10);
    });
    let tool: ToolProcess | null = null;
    // Started by the first piece of entries, so a pull that fails before any costs no kernel work.
    const started = (): ToolProcess => {
      if (tool === null) {
        this.createMissingLiveSets();
        tool = ToolProcess.start([this.ipset, "restore"]);
        tool.write(ipsetStagingLines(this.names));
      }
      return tool;
    };
    return {
      ipv4(value, prefixLength) {
        next.ipv4(value, prefixLength);
        // Throws on a list out of order (not the appliance's): the pull fails and nothing is swapped in.
        blocks.add(value, value + 2 ** (32 - prefixLength) - 1);
      },
      ipv6(text) {
        next.ipv6(text);
        out.ascii(prefix6);
        out.ascii(text);
        out.byte(10);
      },
      afterChunk: async () => {
        if (!out.full) return;
        const t = started();
        t.write(out.take());
        await t.flush();
      },
      commit: async (entries) => {
        const held = this.held;
        this.held = null;
        blocks.finish();
        const t = started();
        out.ascii(ipsetSwapLines(this.names));
        t.write(out.take());
        try {
          await t.finish();
        } catch (error) {
          this.destroyStaging();
          throw error;
        }
        this.held = next;
        const changes = held === null ? { added: null, removed: null } : changesOf(entryDifference(held, next));
        return { entries, ...changes, how: "replaced" };
      },
      abandon: async () => {
        if (tool === null) return;
        await tool.kill();
        this.destroyStaging();
      },
    };
  }

  private createMissingLiveSets(): void {
    for (const v of [4, 6] as const) {
      if (runTool([this.ipset, "list", "-name", this.names[v]]).code === 0) continue;
      const created = runTool([this.ipset, ...liveSetCreateArgs(this.names, v)]);
      if (created.code !== 0) throw new Error(`ipset create ${this.names[v]} failed: ${oneLine(created.stderr)}`);
    }
  }

  /** A staging set left by a sync that did not complete (the live sets are untouched). */
  private destroyStaging(): void {
    for (const v of [4, 6] as const) runTool([this.ipset, "destroy", stagingName(this.names[v])]);
  }
}
