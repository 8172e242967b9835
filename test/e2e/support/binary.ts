// The built executable as a new user meets it: located in build/out, run from an empty temporary directory
// with a clean environment, as a real process. Used by every end-to-end test.

import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

const root = join(import.meta.dir, "../../..");

/** The executable under test: `npm run build` writes it; E2E_BINARY=PATH tests another one. */
export const BINARY = process.env.E2E_BINARY ?? join(root, "build/out/abuse-intel");

export function requireBinary(): string {
  if (!existsSync(BINARY)) {
    throw new Error(`${BINARY} does not exist: run \`npm run build\` before \`npm run test:e2e\``);
  }
  return BINARY;
}

/** An empty directory to run the executable from, holding its data directory; removed by cleanup(). */
export interface Sandbox {
  /** The working directory of every process started in the sandbox (empty at first). */
  dir: string;
  /** `<dir>/data`, passed as --data-dir; the executable creates it. */
  dataDir: string;
  cleanup(): void;
}

export function createSandbox(): Sandbox {
  // realpath: on macOS the temporary directory is a symlink, and paths printed by the server are resolved.
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "abuse-intel-e2e-")));
  return { dir, dataDir: join(dir, "data"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The environment of a process under test: the caller's, without any ABUSE_INTEL_* setting of the developer's
 * shell (the tests decide the configuration), plus `extra`.
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("ABUSE_INTEL_")) env[name] = value;
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

// Every process a test started, so none outlives the test run even when a test fails before its cleanup.
const live = new Set<Subprocess>();

export function track(proc: Subprocess): void {
  live.add(proc);
  void proc.exited.then(() => live.delete(proc));
}

function killAll(): void {
  for (const proc of live) proc.kill("SIGKILL");
  live.clear();
}
process.on("exit", killAll);
process.on("beforeExit", killAll);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Text written to the command's stdin (closed afterwards); without it stdin is empty. */
  stdin?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}

/** Runs one command of the executable to completion in the sandbox's directory: `runCli(sb, ["key", "list"])`. */
export async function runCli(sandbox: Sandbox, args: string[], options: CliOptions = {}): Promise<CliResult> {
  const proc = Bun.spawn([requireBinary(), ...args], {
    cwd: sandbox.dir,
    env: cleanEnv(options.env),
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  track(proc);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    if (proc.signalCode === "SIGKILL") {
      throw new Error(`abuse-intel ${args.join(" ")} did not finish within ${timeoutMs} ms\n${stdout}${stderr}`);
    }
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** The first admin's credentials as the first start prints them and writes them to initial-credentials.txt. */
export interface FirstStartCredentials {
  email: string;
  password: string;
  /** The API key created with the admin, when the text shows one. */
  apiKey: string | null;
}

/**
 * Finds the first admin's credentials in a text of `label: value` lines (`email: admin@localhost`,
 * `password: ...`, and an `aik_...` key anywhere); null when the text holds no email and password.
 */
export function parseFirstStartCredentials(text: string): FirstStartCredentials | null {
  const value = (label: string) => {
    const match = text.match(new RegExp(`^[\\s#*-]*(?:admin\\s+)?${label}\\s*[:=]\\s*"?([^\\s"]+)"?\\s*$`, "im"));
    return match ? match[1] : null;
  };
  const email = value("e-?mail");
  const password = value("password");
  if (email === null || password === null) return null;
  const key = text.match(/\baik_[A-Za-z0-9]{40}\b/);
  return { email, password, apiKey: key ? key[0] : null };
}
