// `feed add NAME --file PATH` with a relative PATH (contract 12: a feed refreshed from a file on a mounted share),
// the real CLI in its own processes: the path is the one the operator meant in the shell they typed it in, and a
// later refresh by a process running elsewhere (the server, started by systemd in /) reads that same file.

import { afterAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanUp, cli, tempDir } from "../../support/cli-process";

afterAll(cleanUp);

test("a feed added with a relative --file is refreshed from that file by a process in another directory", async () => {
  const env = { ABUSE_INTEL_DATA_DIR: tempDir() };
  const share = tempDir("share");
  const elsewhere = tempDir("cwd");
  mkdirSync(join(share, "lists"));
  writeFileSync(join(share, "lists", "drop.txt"), "192.0.2.0/24\n");

  const added = await cli(["feed", "add", "drop", "--file", "lists/drop.txt", "--category", "SPAM"], { env, cwd: share });
  expect(added.stdout).toContain("1 entries");

  writeFileSync(join(share, "lists", "drop.txt"), "192.0.2.0/24\n203.0.113.0/24\n");
  const refreshed = await cli(["feed", "refresh", "drop"], { env, cwd: elsewhere });
  expect({ code: refreshed.code, stdout: refreshed.stdout }).toEqual({ code: 0, stdout: "drop: updated, 2 entries\n" });

  const feeds = JSON.parse((await cli(["feed", "list", "--json"], { env })).stdout) as { name: string; source: { file: string } }[];
  expect(feeds.find((f) => f.name === "drop")?.source).toEqual({ file: join(share, "lists", "drop.txt") });
  expect((await cli(["blocklist", "--format", "txt", "--risk", "LOW"], { env })).stdout).toBe("192.0.2.0/24\n203.0.113.0/24\n");
}, 20_000);
