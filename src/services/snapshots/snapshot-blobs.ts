// A snapshot's blobs read on a worker thread (blob-reader-worker.ts) for an edge swapping it in: the event loop
// only receives them. Null when the worker cannot be used: the caller then reads them on its own thread, in steps.

import type { IndexBlobRow } from "../../store/snapshot-file";
import { withReadyWorker } from "../reports/ordered-worker";
import { workerSpecifier } from "../worker-module";

export interface SnapshotBlobs {
  index: IndexBlobRow[];
  /** The trees' blobs were deserialized once, their links checked. */
  linksChecked: boolean;
  /** Entries of the trees shorter than a whole address (listed networks). */
  networkCount: number;
  ranges: { name: string; bytes: Uint8Array }[];
}

export async function readSnapshotBlobsInWorker(file: string): Promise<SnapshotBlobs | null> {
  try {
    const reply = await withReadyWorker<string, SnapshotBlobs | { error: string }, SnapshotBlobs | { error: string }>(
      workerSpecifier("snapshots/blob-reader-worker.ts"),
      "the snapshot's blob reader",
      (worker) => worker.request(file),
    );
    return "error" in reply ? null : reply;
  } catch {
    return null;
  }
}
