// The feed commands as an operator runs them (contract 12): `import blocklist` with its summary and bad lines,
// `--replace`, `feed add|list|refresh|remove` on a file, and the offline `check` and `blocklist` seeing the
// networks, on the data directory and through a snapshot. Each command is the real CLI in its own process.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const FIXTURES = join(import.meta.dir, "../domain/fixtures/feeds");
let dir: string;

async function run(args: string[], stdin?: string) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dir], {
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-feeds-cli-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("abuse-intel import blocklist", () => {
  test("imports a FireHOL netset, prints a one-line summary (no bar off a terminal)", async () => {
    const { stdout, stderr, code } = await run(["import", "blocklist", join(FIXTURES, "firehol_level1.netset"), "--source", "firehol", "--category", "HACKING"]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    expect(stdout).toBe("imported 6 entries into feed firehol from 38 lines (6 listed now, 0 reported addresses rescored); skipped 0 bad lines\n");
  });

  test("bad lines listed with their numbers; stdin with -", async () => {
    const { stdout, stderr, code } = await run(["import", "blocklist", "-", "--source", "mixed", "--category", "SPAM", "--severity", "2"], readFileSync(join(FIXTURES, "bad.txt"), "utf8"));
    expect(code).toBe(0);
    expect(stderr.split("\n").filter(Boolean).map((l) => l.split(":")[0])).toEqual(["line 3", "line 4", "line 5", "line 6"]);
    expect(stdout).toContain("skipped 4 bad lines");
  });

  test("--replace with no valid line is refused and changes nothing", async () => {
    const { stderr, code } = await run(["import", "blocklist", "-", "--source", "firehol", "--category", "HACKING", "--replace"], "# empty today\n");
    expect(code).toBe(2);
    expect(stderr).toContain("nothing was changed");
    const check = await run(["check", "--json", "185.156.72.9"]);
    expect(JSON.parse(check.stdout).networks).toEqual([{ cidr: "185.156.72.0/24", source: "firehol", category: "HACKING" }]);
  });

  test("a reported address the list names is rescored; addresses nobody reported are only listed", async () => {
    expect((await run(["user", "add", "--email", "reporter@example.test", "--tier", "free"])).code).toBe(0);
    const csv = `IP,Categories,ReportDate,Comment\n198.51.100.77,18,${new Date(Date.now() - 3_600_000).toISOString()},sshd\n`;
    expect((await run(["import", "reports", "-", "--reporter", "reporter@example.test"], csv)).code).toBe(0);
    const { stdout, code } = await run(["import", "blocklist", "-", "--source", "mixed-reported", "--category", "HACKING"], "198.51.100.77\n198.51.100.78\n");
    expect(code).toBe(0);
    expect(stdout).toContain("(2 listed now, 1 reported address rescored)");
  }, 60_000);

  test("argument errors exit 2 and name the problem", async () => {
    expect((await run(["import", "blocklist", join(FIXTURES, "drop.txt"), "--category", "SPAM"])).code).toBe(2);
    const unknown = await run(["import", "blocklist", join(FIXTURES, "drop.txt"), "--source", "x", "--category", "NOPE"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("allowed values");
    expect((await run(["import", "blocklist", join(dir, "missing.txt"), "--source", "x", "--category", "SPAM"])).code).not.toBe(0);
  });

  test("offline check and blocklist see the networks, from the data directory and from a snapshot", async () => {
    const check = JSON.parse((await run(["check", "--json", "1.10.17.1"])).stdout);
    expect(check).toMatchObject({ reputationScore: 37, reports: 1, networks: [{ cidr: "1.10.16.0/20", source: "firehol", category: "HACKING" }] });
    const txt = (await run(["blocklist", "--format", "txt", "--risk", "HIGH"])).stdout.trimEnd().split("\n");
    expect(txt).toContain("1.10.16.0/20");
    expect(txt).toContain("5.188.10.179");
    const file = join(dir, "snap.sqlite");
    expect((await run(["snapshot", "export", "--out", file])).code).toBe(0);
    const fromSnapshot = JSON.parse((await run(["check", "--json", "--snapshot", file, "1.10.17.1"])).stdout);
    expect(fromSnapshot.networks).toEqual(check.networks);
    expect(fromSnapshot.reputationScore).toBe(37);
    expect((await run(["blocklist", "--snapshot", file, "--format", "txt", "--risk", "HIGH"])).stdout.trimEnd().split("\n")).toEqual(txt);
  });
});

describe("abuse-intel feed", () => {
  test("add from a file, list, refresh after the file changed, remove", async () => {
    const file = join(dir, "share-drop.txt");
    writeFileSync(file, "192.0.2.0/24 ; SBL1\n");
    const added = await run(["feed", "add", "share", "--file", file, "--category", "SPAM", "--schedule", "*/5 * * * *"]);
    expect(added.code).toBe(0);
    expect(added.stdout).toBe("added feed share (*/5 * * * *): 1 entries\n");
    const list = JSON.parse((await run(["feed", "list", "--json"])).stdout) as { name: string; entries: number; source: unknown; lastError: unknown }[];
    expect(list.find((f) => f.name === "share")).toMatchObject({ entries: 1, source: { file }, lastError: null });
    writeFileSync(file, "100.64.1.0/24 ; SBL2\n");
    expect((await run(["feed", "refresh", "share"])).stdout).toBe("share: updated, 1 entries\n");
    expect(JSON.parse((await run(["check", "--json", "192.0.2.1"])).stdout).networks).toEqual([]);
    rmSync(file);
    const failed = await run(["feed", "refresh", "share"]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain("previous entries kept");
    expect(JSON.parse((await run(["check", "--json", "100.64.1.9"])).stdout).networks).toHaveLength(1);
    const table = (await run(["feed", "list"])).stdout;
    expect(table).toContain("cannot read");
    expect((await run(["feed", "remove", "share"])).code).toBe(0);
    expect(JSON.parse((await run(["check", "--json", "100.64.1.9"])).stdout).networks).toEqual([]);
    expect((await run(["feed", "remove", "share"])).code).toBe(2);
  });

  test("bad definitions are refused before anything is stored", async () => {
    expect((await run(["feed", "add", "x", "--category", "SPAM"])).code).toBe(2);
    expect((await run(["feed", "add", "x", "--url", "ftp://h/x", "--category", "SPAM"])).code).toBe(2);
    expect((await run(["feed", "add", "x", "--file", "/tmp/x", "--category", "SPAM", "--schedule", "sometimes"])).code).toBe(2);
    expect((await run(["feed", "frobnicate"])).code).toBe(2);
    expect(JSON.parse((await run(["feed", "list", "--json"])).stdout).map((f: { name: string }) => f.name)).not.toContain("x");
  });
});
