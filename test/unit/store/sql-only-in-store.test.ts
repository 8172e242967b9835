// Issue 11: SQL lives in src/store/, one module per table group; services, jobs, routes and commands call those
// modules. This scans every file outside src/store/ for SQL: drizzle-orm's query builders, sql`…`, and
// statements prepared or run on a database handle.

import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";

const SRC = join(import.meta.dir, "../../../src");
const SQL = [
  /from "drizzle-orm"/,
  /\bsql`/,
  /\b(sqlite|db|store\.sqlite|store\.db)\s*\.\s*(prepare|query|exec|run|select|insert|update|delete|transaction)\s*[<(]/,
  /\b(SELECT|INSERT INTO|UPDATE|DELETE FROM|CREATE TABLE|PRAGMA)\b[^"`'\n]*\b(FROM|VALUES|SET|WHERE|\w+)\b/,
];

test("no SQL outside src/store/", () => {
  const offenders: string[] = [];
  let files = 0;
  for (const path of new Bun.Glob("**/*.ts").scanSync({ cwd: SRC, absolute: true })) {
    const rel = relative(SRC, path);
    if (rel.startsWith("store/")) continue;
    const code = readFileSync(path, "utf8")
      .split("\n")
      .filter((line) => !line.trimStart().startsWith("//") && !line.trimStart().startsWith("*"))
      .join("\n");
    files++;
    if (SQL.some((pattern) => pattern.test(code))) offenders.push(rel);
  }
  expect(files).toBeGreaterThan(100);
  expect(offenders).toEqual([]);
});
