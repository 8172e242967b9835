// A real HTTP receiver on 127.0.0.1 for webhook tests: records every request (raw body bytes and headers) and
// answers with whatever the test sets, including never.

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Headers;
  /** The exact bytes received. */
  raw: Uint8Array;
  body: string;
  receivedAt: number;
}

export type ReceiverHandler = (request: ReceivedRequest) => Response | Promise<Response>;

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Requests being answered right now (for concurrency checks). */
  inProgress: number;
  maxInProgress: number;
  respondWith(handler: ReceiverHandler): void;
  /** Resolves once `count` requests arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export const ok: ReceiverHandler = () => new Response("ok");
export const never: ReceiverHandler = () => new Promise<Response>(() => {});
export const status = (code: number): ReceiverHandler => () => new Response(`status ${code}`, { status: code });

export function startReceiver(handler: ReceiverHandler = ok): Receiver {
  let current = handler;
  const requests: ReceivedRequest[] = [];
  const state = { inProgress: 0, maxInProgress: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const raw = new Uint8Array(await request.arrayBuffer());
      const received: ReceivedRequest = {
        method: request.method,
        path: new URL(request.url).pathname,
        headers: request.headers,
        raw,
        body: new TextDecoder().decode(raw),
        receivedAt: performance.now(),
      };
      requests.push(received);
      state.inProgress++;
      state.maxInProgress = Math.max(state.maxInProgress, state.inProgress);
      try {
        return await current(received);
      } finally {
        state.inProgress--;
      }
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hook`,
    port: server.port!,
    requests,
    get inProgress() {
      return state.inProgress;
    },
    get maxInProgress() {
      return state.maxInProgress;
    },
    respondWith(next) {
      current = next;
    },
    async waitFor(count, timeoutMs = 5_000) {
      const deadline = performance.now() + timeoutMs;
      while (requests.length < count) {
        if (performance.now() > deadline) throw new Error(`expected ${count} requests, got ${requests.length}`);
        await Bun.sleep(5);
      }
    },
    async stop() {
      await server.stop(true);
    },
  };
}
