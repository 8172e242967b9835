// `abuse-intel firewall sync` (contract 19): pulls the appliance's blocklist (with the ETag of the last list
// applied, so an unchanged one is a 304 and no kernel work) and puts it in the kernel's sets in one step. Any
// failure leaves the sets as they were and is reported in one line; the loop tries again at the next interval.

import { pullBlocklist, type PullSettings } from "./blocklist-pull";
import type { Applied, KernelSets } from "./kernel-sets";

export interface SyncReport {
  ok: boolean;
  line: string;
}

export class FirewallSync {
  /** The ETag of the list the sets hold; null until one was applied, and after a failed apply. */
  private etag: string | null = null;

  constructor(
    private readonly settings: PullSettings,
    private readonly sets: KernelSets,
    /** How the log names the sets. */
    private readonly target: string,
  ) {}

  async syncOnce(): Promise<SyncReport> {
    const started = performance.now();
    const took = () => `${((performance.now() - started) / 1000).toFixed(2)} s`;
    const intake = this.sets.begin();
    let pulled: Awaited<ReturnType<typeof pullBlocklist>>;
    try {
      pulled = await pullBlocklist(this.settings, this.etag, intake, () => intake.afterChunk());
    } catch (error) {
      await intake.abandon();
      return this.failed(`the pull failed: ${(error as Error).message}`);
    }
    if (!pulled.changed) return { ok: true, line: `firewall sync: ${this.target}: unchanged (304), nothing to do, in ${took()}` };
    const pullTook = took();
    let applied: Applied;
    try {
      applied = await intake.commit(pulled.entries);
    } catch (error) {
      this.etag = null;
      return this.failed((error as Error).message);
    }
    this.etag = pulled.etag;
    return { ok: true, line: `firewall sync: ${this.target}: ${describeApplied(applied)} in ${took()} (the pull ${pullTook}, the appliance's answer began after ${(pulled.headersAfterMs / 1000).toFixed(2)} s)` };
  }

  private failed(reason: string): SyncReport {
    return { ok: false, line: `firewall sync: ${this.target}: failed, the sets are left as they were: ${reason}` };
  }
}

function describeApplied(a: Applied): string {
  const entries = `${a.entries} ${a.entries === 1 ? "entry" : "entries"}`;
  const changes = a.added === null ? "added and removed unknown (the sets' contents before were not known)" : `added ${a.added}, removed ${a.removed}`;
  const how = a.how === "unchanged" ? "no kernel change" : a.how === "difference" ? "the difference applied" : "the whole sets replaced";
  return `${entries}, ${changes}, ${how},`;
}

/**
 * Syncs every `everyMs` (start to start) until `stopped()` holds; a stop waits for the sync under way, so the sets
 * are never left half done. `sleep` resolves early when a stop is asked for.
 */
export async function syncLoop(sync: FirewallSync, everyMs: number, log: (report: SyncReport) => void, stop: { stopped(): boolean; sleep(ms: number): Promise<void> }): Promise<void> {
  while (!stop.stopped()) {
    const started = performance.now();
    log(await sync.syncOnce());
    if (stop.stopped()) return;
    await stop.sleep(Math.max(0, everyMs - (performance.now() - started)));
  }
}
