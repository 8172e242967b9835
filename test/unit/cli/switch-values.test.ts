// A switch given a value on the command line means what the value says: `--replace=no` is off (it used to read as
// on, and `import blocklist --replace=no` replaced a feed's entries its operator meant to keep), and a value that
// is neither yes nor no is refused with exit 2.

import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanUp, cli, tempDir } from "../../support/cli-process";

afterAll(cleanUp);

test("import blocklist --replace=no adds to the feed; --replace=maybe is refused", async () => {
  const dir = tempDir();
  const env = { ABUSE_INTEL_DATA_DIR: dir };
  const first = join(dir, "first.txt");
  const second = join(dir, "second.txt");
  writeFileSync(first, "198.51.100.1\n198.51.100.2\n");
  writeFileSync(second, "198.51.100.3\n");
  expect((await cli(["import", "blocklist", first, "--source", "drop", "--category", "SPAM"], { env })).code).toBe(0);
  expect((await cli(["import", "blocklist", second, "--source", "drop", "--category", "SPAM", "--replace=no"], { env })).code).toBe(0);
  const listed = await cli(["blocklist", "--format", "txt", "--risk", "LOW"], { env });
  expect(listed.stdout.trim().split("\n").sort()).toEqual(["198.51.100.1", "198.51.100.2", "198.51.100.3"]);

  const refused = await cli(["import", "blocklist", second, "--source", "drop", "--category", "SPAM", "--replace=maybe"], { env });
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain("--replace");
});
