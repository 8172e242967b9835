// `abuse-intel import reports` as a process: a file large enough for the bulk path (read in many pieces), stdin,
// and the progress bar on a terminal (a pseudo-terminal from util-linux `script`) with rows, rate and time left.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatIpv4 } from "../../../src/domain/ip";
import { createReportFixture, type ReportFixture, rows } from "../services/reports/reports-fixture";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const hasScript = Bun.which("script") !== null;

describe("abuse-intel import reports", () => {
  let f: ReportFixture;
  beforeEach(() => {
    f = createReportFixture();
    f.addUser("importer@example.test");
  });
  afterEach(() => f.close());

  async function run(args: string[], stdin?: string) {
    const proc = Bun.spawn([process.execPath, MAIN, "import", "reports", ...args, "--reporter", "importer@example.test", "--data-dir", f.dir], {
      stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" },
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  }

  const yesterday = () => new Date(Date.now() - 86_400_000).toISOString();
  const schema = () => rows(f.store, "SELECT type, name, sql FROM sqlite_master ORDER BY type, name");

  test("a file of 30,000 rows (60,000 reports: the bulk path) is stored whole, its indexes and triggers as before", async () => {
    const before = schema();
    const date = yesterday();
    const lines = ["IP,Categories,ReportDate,Comment"];
    for (let i = 0; i < 30_000; i++) lines.push(`${formatIpv4(0x0b000000 + (i % 20_000))},"18,14",${date},row ${i}`);
    const file = join(f.dir, "big.csv");
    writeFileSync(file, `${lines.join("\n")}\n`);
    const { stdout, stderr, code } = await run([file]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toBe("imported 60000 reports from 30000 rows (20000 addresses rescored); skipped 0 bad rows\n");
    expect(schema()).toEqual(before);
    expect(rows(f.store, "SELECT count(*) AS n, min(total_reports) AS least, max(total_reports) AS most FROM addresses")).toEqual([{ n: 20_000, least: 2, most: 4 }]);
    expect(rows(f.store, "SELECT count(DISTINCT ip) AS n FROM address_change_log")).toEqual([{ n: 20_000 }]);
    expect(rows(f.store, "SELECT count(*) AS n FROM report_transitions WHERE reason = 'import'")).toEqual([{ n: 60_000 }]);
  });

  test("FILE - reads stdin", async () => {
    const { stdout, code } = await run(["-"], `203.0.113.7,"18,22",${yesterday()},from stdin\n`);
    expect(code).toBe(0);
    expect(stdout).toBe("imported 2 reports from 1 row (1 address rescored); skipped 0 bad rows\n");
    expect(rows(f.store, "SELECT description FROM reports")).toEqual([{ description: "from stdin" }, { description: "from stdin" }]);
  });

  test.skipIf(!hasScript)("on a terminal: a progress bar with rows, rate and time left, then the addresses, bad rows above it", async () => {
    const file = join(f.dir, "tty.csv");
    writeFileSync(file, `IP,Categories,ReportDate,Comment\n203.0.113.7,18,${yesterday()},\nnope,18,${yesterday()},\n`);
    const command = [process.execPath, MAIN, "import", "reports", file, "--reporter", "importer@example.test", "--data-dir", f.dir].map((a) => `'${a}'`).join(" ");
    const proc = Bun.spawn(["script", "-qefc", command, "/dev/null"], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
    const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(0);
    expect(out).toMatch(/\r\[#+\] 100% 2\/2 rows \d+\/s ETA 0s/);
    expect(out).toMatch(/line 3: IP "nope": not an IPv4 or IPv6 address\r?\n/);
    expect(out).toMatch(/\r1 addresses rescored \d+\/s/);
    expect(out).toContain("imported 1 report from 1 row (1 address rescored); skipped 1 bad row");
  });
});
