// `abuse-intel serve` refusing bad input as the real CLI in its own process: an AppError, so the message alone and
// the usage exit status (2), never a stack.

import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const dir = mkdtempSync(join(tmpdir(), "abuse-intel-serve-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test.each([
  [["serve", "extra"], 'serve takes no arguments, got "extra"'],
  [["serve", "--port", "99999"], "--port"],
  [["serve", "--schedule", "rescore=not a cron"], "rescore"],
])("%j: exit 2 with the message naming what is wrong", async (args, message) => {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dir, "--host", "127.0.0.1"], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  expect(code).toBe(2);
  expect(stderr).toContain(message);
  expect(stderr).not.toContain("    at ");
});
