// A worker thread of a large import (score-worker.ts, parse-worker.ts) as its importing thread talks to it: used
// once it posts "ready", answering each request in the order sent, and leaving when it is sent "close". What the
// scoring and the parsing clients share; each keeps its own messages and its own answer to a worker that fails (see them).

export interface OrderedWorker<Request, Reply> {
  /** Resolves true once the worker said "ready", false when it failed or `timeoutMs` passed first. */
  whenReady(timeoutMs: number): Promise<boolean>;
  /** Ready and not failed: a request will be answered. */
  readonly usable: boolean;
  /** Sends a request; resolves with its reply, or rejects with `failure` once the worker fails. */
  request(message: Request, transfer?: ArrayBuffer[]): Promise<Reply>;
  /** Sends a message that has no reply. */
  send(message: unknown): void;
  /** Asks a ready worker to leave by itself with "close" (sparing the wait of terminate()); ends any other. */
  close(): void;
}

/**
 * Starts the worker script at `specifier` (importWorkerSpecifier gives the import's own); `failure` is the error its
 * requests get once it fails.
 */
export function startOrderedWorker<Request, Reply>(specifier: string, failure: string): OrderedWorker<Request, Reply> {
  let worker: Worker | null = null;
  let ready = false;
  let failed = false;
  const pending: { resolve: (reply: Reply) => void; reject: (error: Error) => void }[] = [];
  const readyWaiters: ((ok: boolean) => void)[] = [];
  const fail = () => {
    failed = true;
    ready = false;
    worker?.terminate();
    worker = null;
    for (const waiter of readyWaiters.splice(0)) waiter(false);
    for (const entry of pending.splice(0)) entry.reject(new Error(failure));
  };
  try {
    worker = new Worker(specifier);
    worker.onmessage = (event: MessageEvent<Reply | "ready">) => {
      if (event.data === "ready") {
        ready = true;
        for (const waiter of readyWaiters.splice(0)) waiter(true);
        return;
      }
      pending.shift()?.resolve(event.data);
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
        const timer = setTimeout(() => resolve(false), timeoutMs);
        readyWaiters.push((ok) => {
          clearTimeout(timer);
          resolve(ok);
        });
      });
    },
    get usable() {
      return ready && !failed;
    },
    request(message, transfer = []) {
      if (failed || worker === null) return Promise.reject(new Error(failure));
      return new Promise((resolve, reject) => {
        pending.push({ resolve, reject });
        worker!.postMessage(message, { transfer });
      });
    },
    send(message) {
      worker?.postMessage(message);
    },
    close() {
      if (ready) worker?.postMessage("close");
      else worker?.terminate();
      worker = null;
    },
  };
}

/** How long a worker run for one request may take to load (a loaded machine, a cold executable). */
export const WORKER_READY_TIMEOUT_MS = 60_000;

/**
 * A worker started for one piece of work: `use` runs once it is ready, and it is closed after, whatever happened.
 * `name` names it in errors ("<name> failed", "<name> did not start within 60 s").
 */
export async function withReadyWorker<Request, Reply, T>(specifier: string, name: string, use: (worker: OrderedWorker<Request, Reply>) => Promise<T>): Promise<T> {
  const worker = startOrderedWorker<Request, Reply>(specifier, `${name} failed`);
  try {
    if (!(await worker.whenReady(WORKER_READY_TIMEOUT_MS))) throw new Error(`${name} did not start within ${WORKER_READY_TIMEOUT_MS / 1000} s`);
    return await use(worker);
  } finally {
    worker.close();
  }
}
