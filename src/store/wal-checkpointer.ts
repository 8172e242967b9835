// Checkpoints of the write-ahead log on a thread of their own. SQLite checkpoints from the connection that commits
// once the log passes 1,000 pages, inside that COMMIT: with report ingest writing a few random pages per report,
// that is every few batches, and each one copies the log's pages into the database file and fsyncs it while the
// event loop waits (measured on 1 M addresses: commit p99 28-46 ms and max 0.2-0.3 s with it, 9-13 ms and 20 ms
// without). Here a worker with its own connection runs a PASSIVE checkpoint every 50 ms (a page written by several
// commits in that time is copied once), which never blocks the server's writer or readers, and the server's
// connection checkpoints itself only when the log grows past SAFETY_NET_PAGES (the worker stuck or gone).
// Durability is unchanged: a commit is durable once its frames are synced to the log, whoever copies them into
// the database file later.

import type { Store } from "./database";

/** The server connection's own automatic checkpoint, left as a safety net: 64 MiB of log at 4 KiB pages. */
export const SAFETY_NET_PAGES = 16_384;
/** SQLite's default, restored on stop. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;
const DEFAULT_INTERVAL_MS = 50;

export interface CheckpointStats {
  /** Checkpoints the worker ran that copied at least one frame. */
  checkpoints: number;
  /** Frames copied into the database file in all. */
  framesCopied: number;
}

export interface WalCheckpointer {
  readonly stats: CheckpointStats;
  /** Stops the worker and closes its connection; call it before the store closes. */
  stop(): Promise<void>;
}

// The worker's whole program: a module of its own would need to be an extra entry point of the compiled executable.
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
let db = null;
let timer = null;
self.onmessage = (event) => {
  const message = event.data;
  if (message.type === "start") {
    db = new Database(message.path, { readwrite: true });
    db.exec("PRAGMA busy_timeout = 0");
    db.exec("PRAGMA synchronous = " + message.synchronous);
    const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
    let copied = 0;
    let lastError = "";
    timer = setInterval(() => {
      try {
        const row = checkpoint.get();
        if (row && row.checkpointed > copied) postMessage({ type: "copied", frames: row.checkpointed - copied });
        copied = row && row.log > 0 ? row.checkpointed : 0;
        lastError = "";
      } catch (error) {
        // Said once, not every few milliseconds while it lasts (a full disk, say).
        if (String(error) !== lastError) postMessage({ type: "error", message: String(error) });
        lastError = String(error);
      }
    }, message.intervalMs);
    postMessage({ type: "started" });
  } else if (message.type === "stop") {
    if (timer !== null) clearInterval(timer);
    db?.close();
    postMessage({ type: "stopped" });
  }
};
`;

let workerUrl: string | null = null;

/**
 * Starts checkpointing `store`'s log in the background and raises the store connection's own automatic
 * checkpoint to SAFETY_NET_PAGES. Only for a store on a file; resolves once the worker's connection is open.
 */
export async function startWalCheckpointer(store: Store, options: { intervalMs?: number } = {}): Promise<WalCheckpointer> {
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
  const worker = new Worker(workerUrl);
  const stats: CheckpointStats = { checkpoints: 0, framesCopied: 0 };
  let stopped: (() => void) | null = null;
  const started = new Promise<void>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent) => {
      const message = event.data as { type: string; frames?: number; message?: string };
      if (message.type === "started") resolve();
      else if (message.type === "copied") {
        stats.checkpoints++;
        stats.framesCopied += message.frames ?? 0;
      } else if (message.type === "error") console.error(`background checkpoint: ${message.message}`);
      else if (message.type === "stopped") stopped?.();
    };
    worker.onerror = (event) => reject(new Error(`the checkpoint worker failed: ${event.message}`));
  });
  const synchronous = (store.sqlite.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
  worker.postMessage({ type: "start", path: store.path, synchronous, intervalMs: options.intervalMs ?? DEFAULT_INTERVAL_MS });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      started,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("the checkpoint worker did not start within 5 s")), 5_000))),
    ]);
  } catch (error) {
    worker.terminate();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  store.sqlite.exec(`PRAGMA wal_autocheckpoint = ${SAFETY_NET_PAGES}`);
  // The worker alone must not keep a process alive.
  worker.unref();
  return {
    stats,
    async stop() {
      if (stopped !== null) return;
      const done = new Promise<void>((resolve) => (stopped = resolve));
      worker.postMessage({ type: "stop" });
      await done;
      worker.terminate();
      store.sqlite.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    },
  };
}
