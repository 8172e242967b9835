// A database path that is a directory is a problem the checks name (doctor, serve, backup and restore read them),
// not a raw EISDIR from reading its header.

import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileProblem } from "../../../src/store/database-checks";

const dir = mkdtempSync(join(tmpdir(), "abuse-intel-file-problem-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a directory where the database file should be is named as such", () => {
  const path = join(dir, "abuse-intel.db");
  mkdirSync(path);
  expect(fileProblem(path)).toBe("it is a directory, not a database file");
});

test("a missing or empty file is no problem; a short one is", () => {
  expect(fileProblem(join(dir, "missing.db"))).toBeNull();
  writeFileSync(join(dir, "empty.db"), "");
  expect(fileProblem(join(dir, "empty.db"))).toBeNull();
  writeFileSync(join(dir, "short.db"), "x".repeat(10));
  expect(fileProblem(join(dir, "short.db"))).toContain("truncated");
});
