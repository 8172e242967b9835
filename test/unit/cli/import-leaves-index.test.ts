// The first `serve` after a large `import reports` starts as fast as later ones: the import leaves the index file
// (DATA_DIR/index.bin) ready, so the server loads it ("index: loaded from", nothing to replay) instead of
// rebuilding from the table, as it did when the import changed more addresses than a start replays.

import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REFRESH_FROM_ROWS } from "../../../src/services/changes/persisted-index";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const root = mkdtempSync(join(tmpdir(), "abuse-intel-import-index-"));
const dataDir = join(root, "data");
const env = { ...process.env, ABUSE_INTEL_DATA_DIR: "", ABUSE_INTEL_ADMIN_PASSWORD: "import-index-test-password" };
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function run(args: string[]): Promise<string> {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dataDir], { stdout: "pipe", stderr: "pipe", env });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}: ${stderr}`);
  return stdout;
}

/** The index line `serve` logs before it listens; the server is stopped again. */
async function indexLineOfStart(): Promise<string> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env });
  try {
    const reader = proc.stdout.getReader();
    let log = "";
    while (!log.includes("listening on")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the server exited:\n${log}${await new Response(proc.stderr).text()}`);
      log += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    return log.split("\n").find((l) => l.startsWith("index: ")) ?? "";
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

test("after importing more addresses than a start replays, the index file is written and the next start loads it", async () => {
  await run(["user", "add", "--email", "r@example.test", "--tier", "free"]);
  const addresses = REFRESH_FROM_ROWS + 500;
  const when = new Date(Date.now() - 86_400_000).toISOString();
  const rows = Array.from({ length: addresses }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255},18,${when},flood`);
  const file = join(root, "reports.csv");
  writeFileSync(file, `IP,Categories,ReportDate,Comment\n${rows.join("\n")}\n`);
  expect(existsSync(join(dataDir, "index.bin"))).toBe(false);

  const out = await run(["import", "reports", file, "--reporter", "r@example.test"]);
  expect(out).toContain(`index: wrote ${join(dataDir, "index.bin")} (${addresses} addresses`);
  expect(existsSync(join(dataDir, "index.bin"))).toBe(true);

  const line = await indexLineOfStart();
  expect(line).toStartWith(`index: loaded from ${join(dataDir, "index.bin")} (${addresses} addresses, 0 changed since)`);
}, 180_000);
