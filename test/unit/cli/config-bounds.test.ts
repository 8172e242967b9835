// Values the command line takes are bounded where a larger one would break the program after it started: every
// value is checked at start and a bad one stops it with exit 2 naming it (README "Configuration"). A retention or
// half-life of 1e308 days made the first rescoring spin for ever (the server stopped answering, /healthz too); a
// --jwt-ttl of 1e13 s made every login a 500 (an expiry past year 275760); an --every past 24 days overflowed the
// timer's 32-bit delay and pulled the primary every millisecond.

import { afterAll, expect, test } from "bun:test";
import { cleanUp, cli, tempDir } from "../../support/cli-process";

afterAll(cleanUp);

const stamp = () => new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, "Z");

test.each([
  ["--retention-days", "1e308"],
  ["--retention-days", "36501"],
  ["--half-life-days", "1e308"],
  ["--jwt-ttl", "1e13"],
  ["--every", "600h"],
])("serve %s %s is refused at start with exit 2, naming it", async (flag, value) => {
  const run = await cli(["serve", "--data-dir", tempDir(), "--port", "0", "--host", "127.0.0.1", flag, value], { timeoutMs: 10_000 });
  expect({ code: run.code, timedOut: run.timedOut }).toEqual({ code: 2, timedOut: false });
  expect(run.stderr).toContain(flag);
  expect(run.stderr).not.toContain("    at ");
});

test("import reports with a huge --retention-days is refused at once, not left spinning", async () => {
  const dataDir = tempDir();
  const env = { ABUSE_INTEL_DATA_DIR: dataDir };
  expect((await cli(["user", "add", "--email", "r@example.com", "--tier", "pro"], { env })).code).toBe(0);
  const csv = `IP,Categories,ReportDate,Comment\n198.51.100.7,18,${stamp()},ssh\n`;
  const run = await cli(["import", "reports", "-", "--reporter", "r@example.com", "--retention-days", "1e308"], { env, stdin: csv, timeoutMs: 10_000 });
  expect({ code: run.code, timedOut: run.timedOut }).toEqual({ code: 2, timedOut: false });
  // The bound itself is taken: a century of retention imports and scores.
  const ok = await cli(["import", "reports", "-", "--reporter", "r@example.com", "--retention-days", "36500"], { env, stdin: csv, timeoutMs: 10_000 });
  expect(ok.code).toBe(0);
});
