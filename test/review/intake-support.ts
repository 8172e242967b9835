// Helpers of the intake review's tests: the real `abuse-intel serve` as a process on 127.0.0.1 port 0, with a
// known admin password, and a login for a user access token.

import { join } from "node:path";

export const MAIN = join(import.meta.dir, "../../src/main.ts");
export const ADMIN_EMAIL = "admin@review.test";
export const ADMIN_PASSWORD = "review-password-0123456789";

export interface ServeProcess {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  stderr: Promise<string>;
  stdout: () => string;
}

export async function startServe(dataDir: string, extraEnv: Record<string, string> = {}): Promise<ServeProcess> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ABUSE_INTEL_DATA_DIR: "", ABUSE_INTEL_ADMIN_EMAIL: ADMIN_EMAIL, ABUSE_INTEL_ADMIN_PASSWORD: ADMIN_PASSWORD, ...extraEnv },
  });
  const stderr = new Response(proc.stderr as ReadableStream).text();
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let out = "";
  const deadline = setTimeout(() => proc.kill("SIGKILL"), 15_000);
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) {
      clearTimeout(deadline);
      throw new Error(`the server stopped: ${await stderr}`);
    }
    out += new TextDecoder().decode(value);
  }
  clearTimeout(deadline);
  // Keep draining stdout so the child never blocks on a full pipe.
  (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      out += new TextDecoder().decode(value);
    }
  })().catch(() => {});
  const url = /listening on (http:\/\/\S+)/.exec(out)![1];
  return { proc, url, stderr, stdout: () => out };
}

export async function login(url: string, email = ADMIN_EMAIL, password = ADMIN_PASSWORD): Promise<string> {
  const res = await fetch(`${url}/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });
  if (res.status !== 200) throw new Error(`login: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { accessToken: string } }).data.accessToken;
}

/** Kills the process if it is still running and waits for it. */
export async function stop(p: ServeProcess | null, signal: "SIGTERM" | "SIGKILL" = "SIGKILL"): Promise<void> {
  if (p === null) return;
  if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill(signal);
  await p.proc.exited;
}
