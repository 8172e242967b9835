// A directory given where a command reads a FILE (`import reports|blocklist FILE`, `check --snapshot FILE`,
// `snapshot info FILE`, `restore FILE`), each the real CLI in its own process: refused (exit 2) with one line that
// names it as a directory, not as a missing file (which sends the operator looking for a typo that is not there)
// nor with a raw error.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanUp, cli, tempDir } from "../../support/cli-process";

let dir: string;
let env: Record<string, string>;

beforeAll(() => {
  const base = tempDir("input-files");
  dir = join(base, "lists");
  mkdirSync(dir);
  writeFileSync(join(dir, "drop.txt"), "192.0.2.1\n");
  env = { ABUSE_INTEL_DATA_DIR: join(base, "data") };
});
afterAll(cleanUp);

function expectNamedAsADirectory(run: { code: number | null; stderr: string }): void {
  expect(run.code).toBe(2);
  expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(run.stderr).toContain(`${dir} is a directory`);
}

test("import blocklist and import reports", async () => {
  expectNamedAsADirectory(await cli(["import", "blocklist", dir, "--source", "drop", "--category", "SPAM"], { env }));
  expectNamedAsADirectory(await cli(["import", "reports", dir, "--reporter", "someone@example.com"], { env }));
}, 20_000);

test("a snapshot to read", async () => {
  expectNamedAsADirectory(await cli(["check", "--snapshot", dir, "192.0.2.1"]));
  expectNamedAsADirectory(await cli(["snapshot", "info", dir]));
}, 20_000);

test("restore, which leaves the data directory it would have made uncreated", async () => {
  expectNamedAsADirectory(await cli(["restore", dir], { env }));
  expect(existsSync(env.ABUSE_INTEL_DATA_DIR)).toBe(false);
}, 20_000);
