// `abuse-intel serve` as a real process for end-to-end tests: started in a sandbox on a free port, its output
// collected, ready once /readyz answers 200, and stopped with SIGTERM (SIGKILL if it hangs).

import type { Subprocess } from "bun";
import { afterEach, beforeEach } from "bun:test";
import { cleanEnv, createSandbox, requireBinary, track, type Sandbox } from "./binary";

export interface CallInit {
  headers?: Record<string, string>;
  /** Sent as the JSON body with `Content-Type: application/json`. */
  json?: unknown;
  body?: RequestInit["body"];
}

/** The JSON body of a response, untyped: tests assert on its exact shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const bodyOf = async (res: Response): Promise<any> => res.json();

export interface RunningServer {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** `http://127.0.0.1:PORT`, the port the server printed. */
  url: string;
  /** Everything the process wrote to stdout and stderr so far, interleaved. */
  output(): string;
  /** Resolves with the first match of `pattern` in the output, waiting for it up to `timeoutMs`. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  request(method: string, path: string, init?: CallInit): Promise<Response>;
  /** Sends `signal` and waits for the exit; SIGKILL after `timeoutMs`. Returns the exit code (null if killed). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

export interface StartOptions {
  /** Extra arguments after the sandbox's `serve --host 127.0.0.1 --port 0 --data-dir DIR`. */
  args?: string[];
  env?: Record<string, string>;
  readyTimeoutMs?: number;
  /** Wait for /readyz to answer 200 (default true; an edge is not ready until its first snapshot). */
  waitReady?: boolean;
}

const LISTENING = /abuse-intel listening on http:\/\/(?:\[[^\]]+\]|[^\s:/]+):(\d+)/;

export async function startServer(sandbox: Sandbox, options: StartOptions = {}): Promise<RunningServer> {
  const proc = Bun.spawn(
    [requireBinary(), "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", sandbox.dataDir, ...(options.args ?? [])],
    { cwd: sandbox.dir, env: cleanEnv(options.env), stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  track(proc);

  let text = "";
  const waiters = new Set<() => void>();
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      for (const wake of waiters) wake();
    }
  };
  const drained = Promise.all([collect(proc.stdout), collect(proc.stderr)]);
  let exited = false;
  void proc.exited.then(async () => {
    await drained.catch(() => undefined);
    exited = true;
    for (const wake of waiters) wake();
  });

  const waitForOutput = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const match = text.match(pattern);
        if (match) return finish(() => resolve(match));
        if (exited) return finish(() => reject(new Error(`the server exited (code ${proc.exitCode}) before printing ${pattern}:\n${text}`)));
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`no ${pattern} in the server's output within ${timeoutMs} ms:\n${text}`))), timeoutMs);
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      waiters.add(check);
      check();
    });

  const stop = async (signal: NodeJS.Signals = "SIGTERM", timeoutMs = 10_000) => {
    if (!exited && proc.exitCode === null) {
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
      await proc.exited;
      clearTimeout(timer);
    }
    await drained.catch(() => undefined);
    return proc.exitCode;
  };

  try {
    const port = Number((await waitForOutput(LISTENING, options.readyTimeoutMs ?? 60_000))[1]);
    const url = `http://127.0.0.1:${port}`;
    const server: RunningServer = {
      proc,
      url,
      output: () => text,
      waitForOutput,
      request(method, path, init = {}) {
        const headers: Record<string, string> = { ...init.headers };
        let body = init.body;
        if (init.json !== undefined) {
          body = JSON.stringify(init.json);
          headers["content-type"] ??= "application/json";
        }
        return fetch(url + path, { method, headers, body, signal: AbortSignal.timeout(60_000) });
      },
      stop,
    };
    if (options.waitReady ?? true) await waitUntilReady(server, options.readyTimeoutMs ?? 60_000);
    return server;
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  }
}

async function waitUntilReady(server: RunningServer, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await server.request("GET", "/readyz");
      last = `${res.status} ${await res.text()}`;
      if (res.status === 200) return;
    } catch (error) {
      last = String(error);
    }
    await Bun.sleep(50);
  }
  throw new Error(`/readyz did not answer 200 within ${timeoutMs} ms (last: ${last}):\n${server.output()}`);
}

/**
 * A fresh sandbox for each test of the file, and `start` for servers in it: after each test those still running
 * are killed (SIGKILL) and the sandbox removed. Registers the file's beforeEach/afterEach.
 */
export function sandboxEachTest(): { sandbox: () => Sandbox; start: (options?: StartOptions) => Promise<RunningServer> } {
  let current: Sandbox | null = null;
  const servers: RunningServer[] = [];
  beforeEach(() => {
    current = createSandbox();
  });
  afterEach(async () => {
    // A test may have stopped some itself (a crash it stages): only those still running are killed.
    for (const s of servers.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) await s.stop("SIGKILL");
    current?.cleanup();
    current = null;
  });
  const sandbox = (): Sandbox => {
    if (current === null) throw new Error("sandboxEachTest: no test is running");
    return current;
  };
  return {
    sandbox,
    start: async (options) => {
      const server = await startServer(sandbox(), options);
      servers.push(server);
      return server;
    },
  };
}
