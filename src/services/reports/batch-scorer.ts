// Where a large import's address batches are scored: on a worker thread (score-worker.ts) when one has started,
// else on the importing thread. Both run the same function; the worker only lets scoring overlap with SQLite.
// A worker that never says it is ready (an executable built without the worker's entry point) is not used: the
// batches are scored on the importing thread instead. One that fails once it has batches fails the import (it
// rolls back), as its batches went to it whole.

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
  let worker: Worker | null = null;
  let ready = false;
  let failed = false;
  const queue: { resolve: (scored: ScoredAddressBatch) => void; reject: (error: Error) => void }[] = [];
  const readyWaiters: ((ok: boolean) => void)[] = [];
  const fail = () => {
    failed = true;
    ready = false;
    worker?.terminate();
    worker = null;
    for (const waiter of readyWaiters.splice(0)) waiter(false);
    for (const entry of queue.splice(0)) entry.reject(new Error("the import's scoring worker failed"));
  };
  try {
    worker = new Worker(importWorkerSpecifier("score-worker.ts"));
    worker.onmessage = (event: MessageEvent<ScoredAddressBatch | "ready">) => {
      if (event.data === "ready") {
        ready = true;
        for (const waiter of readyWaiters.splice(0)) waiter(true);
        return;
      }
      queue.shift()?.resolve(event.data);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      fail();
    };
    // The import does not wait for an idle worker to exit.
    worker.unref();
  } catch {
    fail();
  }
  return {
    whenReady(timeoutMs) {
      if (ready || failed) return Promise.resolve(ready);
      return new Promise((resolve) => {
        readyWaiters.push(resolve);
        setTimeout(() => resolve(ready), timeoutMs).unref();
      });
    },
    score(batch) {
      if (!ready || failed || worker === null) return Promise.resolve(scoreAddressBatch(batch));
      return new Promise((resolve, reject) => {
        queue.push({ resolve, reject });
        worker!.postMessage(batch, { transfer: batchBuffers(batch) });
      });
    },
    close() {
      worker?.postMessage("close");
      worker = null;
    },
  };
}
