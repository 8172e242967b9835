// A server for a benchmark as a process of its own, pinned to one core: started and waited for until it prints
// its "listening on http://…" line (its output drained from then on, so it never blocks on a full pipe), and
// stopped by its pid.

import { join } from "node:path";

export interface ServerProcess {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
}

const root = join(import.meta.dir, "..", "..", "..");

/** Spawns `argv` on `core` and resolves with its URL once it listens; `what` names it in errors. */
export async function startServer(argv: string[], options: { core: number; what: string; timeoutMs?: number }): Promise<ServerProcess> {
  const proc = Bun.spawn(["taskset", "-c", String(options.core), ...argv], { cwd: root, stdout: "pipe", stderr: "inherit", env: { ...process.env, NO_COLOR: "1" } });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let seen = "";
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const match = /listening on (http:\/\/[0-9.]+:\d+)/.exec(seen);
    if (match) {
      void (async () => {
        while (!(await reader.read()).done);
      })();
      return { url: match[1]!, proc };
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`${options.what} did not start: ${seen}`);
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`${options.what} exited before listening: ${seen}`);
    seen += decoder.decode(value, { stream: true });
  }
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the process is gone. */
export async function stopServer(server: ServerProcess): Promise<void> {
  server.proc.kill("SIGTERM");
  const timer = setTimeout(() => server.proc.kill("SIGKILL"), 5_000);
  await server.proc.exited;
  clearTimeout(timer);
}
