// One server per data directory, through the real CLI in its own processes: a second `serve` on a directory a
// live server holds is refused and leaves the first's pid file alone; a `serve` whose listen fails gives its
// directory back; so `restore` keeps refusing while the first server runs, and the file goes when it stops.

import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const dir = mkdtempSync(join(tmpdir(), "abuse-intel-serve-dir-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = { ...process.env, ABUSE_INTEL_DATA_DIR: "" };

async function run(args: string[]): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], { stdout: "pipe", stderr: "pipe", env });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stderr };
}

test("a second serve on a held data directory, or one that cannot listen, changes nothing; restore keeps refusing", async () => {
  const held = join(dir, "held");
  const other = join(dir, "other");
  const first = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", held], { stdout: "pipe", stderr: "pipe", env });
  try {
    // The line that says where it listens.
    const reader = first.stdout.getReader();
    let out = "";
    while (!/listening on http:\/\/127\.0\.0\.1:(\d+)/.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the first server stopped: ${out}`);
      out += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1];
    const pidFile = join(held, "serve.pid");
    expect(readFileSync(pidFile, "utf8").trim()).toBe(String(first.pid));

    const second = await run(["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", held]);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`a server (pid ${first.pid}) is already running on ${held}`);
    expect(readFileSync(pidFile, "utf8").trim()).toBe(String(first.pid));

    const busyPort = await run(["serve", "--host", "127.0.0.1", "--port", port, "--data-dir", other]);
    expect(busyPort.code).toBe(2);
    expect(busyPort.stderr).toContain(`cannot listen on 127.0.0.1:${port}`);
    expect(busyPort.stderr).not.toContain("    at ");
    expect(existsSync(join(other, "serve.pid"))).toBe(false);

    const backup = join(dir, "held.backup");
    expect((await run(["backup", "--out", backup, "--data-dir", held])).code).toBe(0);
    const restore = await run(["restore", backup, "--data-dir", held]);
    expect(restore.code).toBe(2);
    expect(restore.stderr).toContain("is running");
  } finally {
    first.kill("SIGTERM");
    await first.exited;
  }
  expect(existsSync(join(held, "serve.pid"))).toBe(false);
}, 60_000);
