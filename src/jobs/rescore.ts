// The `rescore` job (contract 5.7, 9): scores decay with time, so every address whose `rescore_due_at` has come
// is recomputed, in small transactions, and its new record goes into the index (and to the response cache)
// after each commit. The index's generation moves with it, so blocklist ETags change.
//
// Bounded: at most `maxPerRun` addresses per run (the rest stay due and are taken by the next run), and the
// event loop is yielded between batches, so a large backlog neither blocks lookups nor holds the write lock.

import { dueForRescore } from "../store/address-rows";
import { parseIp } from "../domain/ip";
import { AddressChanges, type AddressChangePublisher } from "../services/changes/address-changes";
import type { AddressScorer } from "../services/reports/scorer";
import { inTransaction, type Store } from "../store/database";
import { nextTurn } from "../services/event-loop-turns";
import type { Job } from "./scheduler";

export interface RescoreOptions {
  /** Addresses per transaction. */
  batchSize: number;
  /** Addresses per run at most. */
  maxPerRun: number;
}

export const DEFAULT_RESCORE_OPTIONS: RescoreOptions = Object.freeze({ batchSize: 500, maxPerRun: 100_000 });

export interface RescoreSummary {
  [key: string]: unknown;
  /** Addresses recomputed. */
  rescored: number;
  /** Of those, the ones whose score moved. */
  scoreChanged: number;
  /** Of those, the ones left with no counting report (out of the index now). */
  removed: number;
  /** Whether addresses were still due when the run stopped at its bound. */
  more: boolean;
}

export interface RescoreDeps {
  store: Store;
  scorer: AddressScorer;
  changes: AddressChangePublisher;
}

export function rescoreJob(deps: RescoreDeps, options: Partial<RescoreOptions> = {}): Job {
  const { batchSize, maxPerRun } = { ...DEFAULT_RESCORE_OPTIONS, ...options };
  const due = dueForRescore(deps.store);
  return {
    name: "rescore",
    description: "recomputes the scores that time decay moved; updates the index and blocklists",
    defaultSchedule: "*/10 * * * *",
    async run({ now }) {
      const summary: RescoreSummary = { rescored: 0, scoreChanged: 0, removed: 0, more: false };
      for (;;) {
        const limit = Math.min(batchSize, maxPerRun - summary.rescored);
        if (limit <= 0) {
          summary.more = due.any(now);
          break;
        }
        const rows = due.all(now, limit);
        if (rows.length === 0) break;
        const changes = new AddressChanges();
        inTransaction(deps.store, () => {
          for (const row of rows) {
            const ip = parseIp(row.ip);
            const record = deps.scorer.rescore(ip, now);
            changes.set(ip, record);
            if (record === null) summary.removed++;
            else if (record.reputationScore !== row.score) summary.scoreChanged++;
          }
        });
        deps.changes.publish(changes);
        summary.rescored += rows.length;
        if (rows.length < limit) break;
        // Let requests in between batches.
        await nextTurn();
      }
      return summary;
    },
  };
}
