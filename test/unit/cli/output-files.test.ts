// The files commands write where an operator names them (`snapshot export --out`, `backup --out`, `snapshot
// keygen --out`), each the real CLI in its own process: a mistyped path never replaces the data directory's
// database or a file that is not the command's own, and a path that cannot be written is refused (exit 2) with one
// line.

import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { cleanUp, cli, tempDir } from "../../support/cli-process";

afterAll(cleanUp);

/** A data directory with one account, and the environment that points commands at it. */
async function dataDirWithAnAccount(): Promise<{ dataDir: string; env: Record<string, string> }> {
  const dataDir = tempDir("output-files");
  const env = { ABUSE_INTEL_DATA_DIR: dataDir };
  expect((await cli(["user", "add", "--email", "keep@example.com", "--tier", "pro"], { env })).code).toBe(0);
  return { dataDir, env };
}

/** The accounts, read by a later command: it fails when the database was replaced. */
async function emails(env: Record<string, string>): Promise<string[]> {
  const listed = await cli(["user", "list", "--json"], { env });
  expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: "" });
  return JSON.parse(listed.stdout).map((u: { email: string }) => u.email);
}

/** A refusal: exit 2, one line on stderr. */
function expectRefused(run: { code: number | null; stderr: string }, saying: string): void {
  expect(run.code).toBe(2);
  expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(run.stderr).toContain(saying);
}

describe("snapshot export --out", () => {
  test("refuses the data directory's own database: renamed over it, every account and report would be gone", async () => {
    const { dataDir, env } = await dataDirWithAnAccount();
    expectRefused(await cli(["snapshot", "export", "--out", join(dataDir, "abuse-intel.db")], { env }), "the data directory's own database");
    expect(await emails(env)).toContain("keep@example.com");
  }, 120_000);

  test("refuses SQLite's files beside it under another spelling, though they do not exist yet", async () => {
    const { dataDir, env } = await dataDirWithAnAccount();
    const wal = join(dataDir, "..", basename(dataDir), "abuse-intel.db-wal");
    expect(existsSync(wal)).toBe(false);
    expectRefused(await cli(["snapshot", "export", "--out", wal], { env }), "the data directory's own database");
    expectRefused(await cli(["snapshot", "export", "--out", "abuse-intel.db-shm"], { env, cwd: dataDir }), "the data directory's own database");
    expect(existsSync(wal)).toBe(false);
    expect(await emails(env)).toContain("keep@example.com");
  }, 120_000);

  test("replaces an earlier snapshot, and no other existing file", async () => {
    const { env } = await dataDirWithAnAccount();
    const notes = join(tempDir("out"), "notes.txt");
    writeFileSync(notes, "keep me\n");
    expectRefused(await cli(["snapshot", "export", "--out", notes], { env }), "is not a snapshot");
    expect(readFileSync(notes, "utf8")).toBe("keep me\n");

    const latest = join(tempDir("out"), "latest.sqlite");
    expect((await cli(["snapshot", "export", "--out", latest], { env })).code).toBe(0);
    expect((await cli(["snapshot", "export", "--out", latest], { env })).code).toBe(0);
  }, 120_000);

  test("a directory, or a path under a missing one, is refused with one line", async () => {
    const { env } = await dataDirWithAnAccount();
    const out = tempDir("out");
    expectRefused(await cli(["snapshot", "export", "--out", out], { env }), "is a directory");
    expectRefused(await cli(["snapshot", "export", "--out", join(out, "missing", "s.sqlite")], { env }), "does not exist");
  }, 120_000);
});

describe("backup --out", () => {
  test("refuses the data directory's write-ahead log, which does not exist while no server runs", async () => {
    const { dataDir, env } = await dataDirWithAnAccount();
    const wal = join(dataDir, "abuse-intel.db-wal");
    expect(existsSync(wal)).toBe(false);
    expectRefused(await cli(["backup", "--out", wal], { env }), "the data directory's own database");
    expect(existsSync(wal)).toBe(false);
  }, 120_000);
});

describe("snapshot keygen --out", () => {
  test("a prefix in a missing directory, or one naming a directory, is refused with one line", async () => {
    const keys = tempDir("keys");
    expectRefused(await cli(["snapshot", "keygen", "--out", join(keys, "missing", "signing")]), "does not exist");
    mkdirSync(join(keys, "dir.key"));
    expectRefused(await cli(["snapshot", "keygen", "--out", join(keys, "dir")]), "is a directory");
  });

  test("refused because PREFIX.pub exists, it leaves no PREFIX.key behind", async () => {
    const keys = tempDir("keys");
    writeFileSync(join(keys, "signing.pub"), "someone else's\n");
    expectRefused(await cli(["snapshot", "keygen", "--out", join(keys, "signing")]), "already exists");
    expect(existsSync(join(keys, "signing.key"))).toBe(false);
  });
});
