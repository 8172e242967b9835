// Where a large import's address batches are scored: on a worker thread (score-worker.ts) when one has started,
// else on the importing thread. Both run the same function; the worker only lets scoring overlap with SQLite.
// A worker that never says it is ready (an executable built without the worker's entry point) is not used: the
// batches are scored on the importing thread instead. One that fails once it has batches fails the import (it
// rolls back), as its batches went to it whole.

import { startOrderedWorker } from "./ordered-worker";
import { importWorkerSpecifier } from "./worker-module";
import { type AddressBatch, batchBuffers, type ScoredAddressBatch, scoreAddressBatch } from "./address-batch-scoring";

export interface BatchScorer {
  score(batch: AddressBatch): Promise<ScoredAddressBatch>;
  close(): void;
}

export const inThreadScorer: BatchScorer = {
  score: (batch) => Promise.resolve(scoreAddressBatch(batch)),
  close() {},
};

export interface ScoringWorker extends BatchScorer {
  /** Resolves true once ready, false when it failed or `timeoutMs` passed. */
  whenReady(timeoutMs: number): Promise<boolean>;
}

export function startScoringWorker(): ScoringWorker {
  const worker = startOrderedWorker<AddressBatch, ScoredAddressBatch>(importWorkerSpecifier("score-worker.ts"), "the import's scoring worker failed");
  return {
    whenReady: (timeoutMs) => worker.whenReady(timeoutMs),
    // A batch is scored here when the worker is not (or no longer) usable: the batches it had fail the import.
    score: (batch) => (worker.usable ? worker.request(batch, batchBuffers(batch)) : Promise.resolve(scoreAddressBatch(batch))),
    close: () => worker.close(),
  };
}
