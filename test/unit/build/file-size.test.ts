// Issue 11: no file under src/ is over 500 lines (generated files aside), so each stays one idea a newcomer can
// read in one sitting. Lists the offenders with their lengths.

import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";

const SRC = join(import.meta.dir, "../../../src");
const MAX_LINES = 500;

test(`no file under src/ is over ${MAX_LINES} lines`, () => {
  const glob = new Bun.Glob("**/*.ts");
  const offenders: string[] = [];
  let files = 0;
  for (const path of glob.scanSync({ cwd: SRC, absolute: true })) {
    if (path.endsWith(".generated.ts")) continue;
    files++;
    const lines = readFileSync(path, "utf8").split("\n").length - 1;
    if (lines > MAX_LINES) offenders.push(`${relative(SRC, path)}: ${lines} lines`);
  }
  expect(files).toBeGreaterThan(100);
  expect(offenders).toEqual([]);
});
