// `abuse-intel serve` starts the scheduled jobs once it listens: a job scheduled every second (croner's
// six-field pattern) has run within a few seconds, seen through `jobs list` on the same data directory; a job
// scheduled daily has not. The only job test that waits on the real clock (about a second).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
let dataDir: string;
let server: Subprocess<"ignore", "pipe", "pipe"> | null = null;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-serve-jobs-"));
});
afterAll(async () => {
  if (server) {
    server.kill("SIGTERM");
    await server.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

async function jobsList(): Promise<{ name: string; lastRunAt: string | null; schedule: string }[]> {
  const proc = Bun.spawn([process.execPath, MAIN, "jobs", "list", "--json", "--data-dir", dataDir], { stdout: "pipe", stderr: "pipe" });
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  expect(code).toBe(0);
  return JSON.parse(stdout);
}

test("serve runs the jobs on their schedules", async () => {
  server = Bun.spawn(
    [process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir, "--schedule", "verify=* * * * * *"],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_ADMIN_PASSWORD: "serve-jobs-test-password" } },
  );
  const reader = server.stdout.getReader();
  let out = "";
  const deadline = Date.now() + 60_000;
  while (!out.includes("listening on")) {
    if (Date.now() > deadline) throw new Error(`the server did not start:\n${out}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`the server exited:\n${out}${await new Response(server.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();

  let jobs = await jobsList();
  const waitUntil = Date.now() + 60_000;
  while (jobs.find((j) => j.name === "verify")!.lastRunAt === null && Date.now() < waitUntil) {
    await Bun.sleep(250);
    jobs = await jobsList();
  }
  expect(jobs.find((j) => j.name === "verify")!.lastRunAt).not.toBeNull();
  expect(jobs.find((j) => j.name === "snapshot")!.lastRunAt).toBeNull();
}, 120_000);
