// The real command line in tests: the entry point (src/main.ts) as a child process, on temporary data
// directories, every process killed at the end.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

export const MAIN = join(import.meta.dir, "../../src/main.ts");

export interface CliResult {
  stdout: string;
  stderr: string;
  code: number | null;
  /** True when the process had to be killed after `timeoutMs`. */
  timedOut: boolean;
}

const temporaryDirs: string[] = [];
const live = new Set<Subprocess>();

export function tempDir(label = "cli"): string {
  const dir = mkdtempSync(join(tmpdir(), `abuse-intel-${label}-`));
  temporaryDirs.push(dir);
  return dir;
}

/** Kills what is still running and removes the temporary directories (call from afterAll). */
export function cleanUp(): void {
  for (const proc of live) proc.kill("SIGKILL");
  live.clear();
  for (const dir of temporaryDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Runs `abuse-intel ARGS` to its end (or kills it after `timeoutMs`). */
export async function cli(args: string[], options: { env?: Record<string, string>; stdin?: string | Uint8Array; timeoutMs?: number; cwd?: string } = {}): Promise<CliResult> {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], {
    cwd: options.cwd,
    stdin: options.stdin === undefined ? "ignore" : typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ABUSE_INTEL_DATA_DIR: "", ...options.env },
  });
  live.add(proc);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, options.timeoutMs ?? 15_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  live.delete(proc);
  return { stdout, stderr, code: timedOut ? null : code, timedOut };
}

export interface Server {
  url: string;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Everything written to stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

/** Starts `abuse-intel serve ARGS` (on 127.0.0.1, port 0) and resolves once it says where it listens. */
export async function startServe(args: string[], options: { env?: Record<string, string>; timeoutMs?: number; cwd?: string } = {}): Promise<Server> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", ...args], {
    cwd: options.cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ABUSE_INTEL_DATA_DIR: "", ...options.env },
  });
  live.add(proc);
  let err = "";
  void (async () => {
    for await (const chunk of proc.stderr) err += new TextDecoder().decode(chunk);
  })();
  const reader = proc.stdout.getReader();
  let out = "";
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  while (Date.now() < deadline) {
    const match = /listening on (http:\/\/[^\s]+)/.exec(out);
    if (match) {
      reader.releaseLock();
      return {
        url: match[1],
        proc,
        stderr: () => err,
        async stop() {
          proc.kill("SIGTERM");
          const timer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
          await proc.exited;
          clearTimeout(timer);
          live.delete(proc);
        },
      };
    }
    const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
    if (next === null || next.done) break;
    out += new TextDecoder().decode(next.value);
  }
  proc.kill("SIGKILL");
  live.delete(proc);
  throw new Error(`serve did not start: stdout ${out} stderr ${err}`);
}
