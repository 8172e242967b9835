// A damaged database at start, and `abuse-intel doctor` (issue 18), each command the real CLI in its own process:
// a truncated file, a bad header and a missing table stop `serve` with a message naming the file, a non-zero exit
// and the file unchanged; doctor names what it finds, also an address row that disagrees with its reports.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
let dir: string;
let db: string;

async function run(args: string[], timeoutMs = 15_000) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dir], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { stdout, stderr, code };
}
const hash = () => createHash("sha256").update(readFileSync(db)).digest("hex");
/** Runs SQL on the database behind doctor's back, checkpointed into the file. */
function alter(sql: string): void {
  const sqlite = new Database(db);
  sqlite.exec(sql);
  sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite.close();
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-doctor-"));
  db = join(dir, "abuse-intel.db");
  // A real database with reports (a user, two reports through the offline import), checkpointed into the file.
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 19) + "Z";
  const csv = `IP,Categories,ReportDate,Comment\n198.51.100.7,18,${yesterday},ssh\n198.51.100.8,22,${yesterday},ssh\n`;
  writeFileSync(join(dir, "r.csv"), csv);
  expect((await run(["user", "add", "--email", "r@example.test", "--tier", "free"])).code).toBe(0);
  expect((await run(["import", "reports", join(dir, "r.csv"), "--reporter", "r@example.test"])).code).toBe(0);
  const sqlite = new Database(db);
  sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite.close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("abuse-intel doctor", () => {
  test("a healthy database: every check ok, exit 0", async () => {
    const { stdout, code } = await run(["doctor"]);
    expect(code).toBe(0);
    expect(stdout).toContain("ok    integrity_check");
    expect(stdout).toMatch(/\d+ address rows agree with their reports/);
    expect(stdout).not.toContain("FAIL");
  });

  test("an address row that disagrees with its reports is named; nothing is changed", async () => {
    alter("UPDATE addresses SET reputation_score = 3 WHERE ip = '198.51.100.7'");
    const before = hash();
    const { stdout, code } = await run(["doctor", "--json"]);
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as { ok: boolean; findings: { check: string; ok: boolean; details: string[] }[] };
    expect(report.ok).toBe(false);
    const index = report.findings.find((f) => f.check === "index against reports")!;
    expect(index.ok).toBe(false);
    expect(index.details[0]).toContain("198.51.100.7: stored score 3");
    expect(hash()).toBe(before);
  });
});

describe("abuse-intel doctor and an address row's rescore due time", () => {
  test("a row whose rescore was put off for good (its score would never decay) is named; an agreeing one is not", async () => {
    alter("UPDATE addresses SET rescore_due_at = NULL WHERE ip = '198.51.100.7'");
    const { stdout, code } = await run(["doctor"]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/198\.51\.100\.7: stored rescore due never, its reports give \d{4}-\d\d-\d\dT/);
    expect(stdout).not.toContain("198.51.100.8:");
  });

  test("a row due later than its reports say is named too", async () => {
    alter("UPDATE addresses SET rescore_due_at = rescore_due_at + 86400000 WHERE ip = '198.51.100.8'");
    const { stdout, code } = await run(["doctor"]);
    expect(code).toBe(1);
    expect(stdout).toContain("198.51.100.8: stored rescore due ");
  });
});

describe("abuse-intel doctor and an address row's categories", () => {
  test("a row whose categories disagree with its reports (it would be on the wrong category lists) is named", async () => {
    // SPAM is bit 0 and no report of 198.51.100.7 is SPAM; its score and counts are left as they are.
    alter("UPDATE addresses SET categories_mask = 1, last_category = 'SPAM' WHERE ip = '198.51.100.7'");
    const { stdout, code } = await run(["doctor"]);
    expect(code).toBe(1);
    expect(stdout).toContain("198.51.100.7: stored categories SPAM (last SPAM), its reports give");
  });
});

describe("abuse-intel doctor with the server's scoring options", () => {
  test("rows scored with a 7-day half-life agree under --half-life-days 7, and not under the default", async () => {
    rmSync(dir, { recursive: true, force: true });
    dir = mkdtempSync(join(tmpdir(), "abuse-intel-doctor-"));
    db = join(dir, "abuse-intel.db");
    const weeksAgo = new Date(Date.now() - 20 * 86_400_000).toISOString().slice(0, 19) + "Z";
    writeFileSync(join(dir, "r.csv"), `IP,Categories,ReportDate,Comment\n198.51.100.9,18,${weeksAgo},ssh\n`);
    expect((await run(["user", "add", "--email", "r@example.test", "--tier", "free"])).code).toBe(0);
    expect((await run(["import", "reports", join(dir, "r.csv"), "--reporter", "r@example.test", "--half-life-days", "7"])).code).toBe(0);
    expect((await run(["doctor", "--half-life-days", "7"])).code).toBe(0);
    const defaults = await run(["doctor"]);
    expect(defaults.code).toBe(1);
    expect(defaults.stdout).toContain("198.51.100.9: stored score");
  });
});

describe("a damaged database at start", () => {
  const damages: [string, () => void, RegExp][] = [
    ["truncated", () => truncateSync(db, Math.floor(statSync(db).size / 2) + 100), /truncated/],
    ["a bad header", () => {
      const bytes = readFileSync(db);
      bytes.set(new TextEncoder().encode("NOT A DATABASE!!"), 0);
      writeFileSync(db, bytes);
    }, /header is not a SQLite database/],
    ["a table missing", () => {
      const sqlite = new Database(db);
      sqlite.exec("PRAGMA foreign_keys = OFF; DROP TABLE report_transitions; PRAGMA wal_checkpoint(TRUNCATE)");
      sqlite.close();
    }, /table report_transitions is missing/],
  ];
  test.each(damages)("%s: serve stops naming the file and what is wrong, exit non-zero, the file unchanged; doctor says so too", async (_, damage, message) => {
    damage();
    const before = hash();
    const served = await run(["serve", "--host", "127.0.0.1", "--port", "0"]);
    expect(served.code).not.toBe(0);
    expect(served.stderr).toContain(db);
    expect(served.stderr).toMatch(message);
    expect(served.stderr).not.toContain("    at ");
    expect(hash()).toBe(before);
    const doctor = await run(["doctor"]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain("FAIL");
    expect(hash()).toBe(before);
  });
});
