// `abuse-intel import reports` as a process: a file large enough for the bulk path (read in many pieces), stdin,
// and the progress bar on a terminal (a pseudo-terminal from util-linux `script`) with rows, rate and time left.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CATEGORIES } from "../../../src/domain/categories";
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
    // An import this large also leaves the index file ready, so the next serve starts without rebuilding it.
    expect(stdout).toStartWith("imported 60000 reports from 30000 rows (20000 addresses rescored); skipped 0 bad rows\nindex: wrote ");
    expect(stdout).toContain("(20000 addresses, ");
    expect(schema()).toEqual(before);
    expect(rows(f.store, "SELECT count(*) AS n, min(total_reports) AS least, max(total_reports) AS most FROM addresses")).toEqual([{ n: 20_000, least: 2, most: 4 }]);
    expect(rows(f.store, "SELECT count(DISTINCT ip) AS n FROM address_change_log")).toEqual([{ n: 20_000 }]);
    expect(rows(f.store, "SELECT count(*) AS n FROM report_transitions WHERE reason = 'import'")).toEqual([{ n: 60_000 }]);
  });

  test("an address inside a feed's listed network counts the listing, on the per-address and on the bulk path", async () => {
    const cli = async (args: string[]) => {
      const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", f.dir], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
      const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      return { stdout, code };
    };
    const list = join(f.dir, "drop.txt");
    writeFileSync(list, "11.0.0.0/24\n203.0.113.0/24\n");
    expect((await cli(["import", "blocklist", list, "--source", "drop", "--category", "SPAM"])).code).toBe(0);
    const date = yesterday();
    const small = join(f.dir, "small.csv");
    writeFileSync(small, `203.0.113.5,"18,22",${date},one row\n198.51.100.7,"18,22",${date},one row\n`);
    expect((await run([small])).code).toBe(0);
    const lines = ["IP,Categories,ReportDate,Comment"];
    for (let i = 0; i < 30_000; i++) lines.push(`${formatIpv4(0x0b000000 + (i % 20_000))},"18,14",${date},row ${i}`);
    const big = join(f.dir, "big.csv");
    writeFileSync(big, `${lines.join("\n")}\n`);
    expect((await run([big])).code).toBe(0);

    // Two reports of its own (BRUTE_FORCE, SSH) and the listing (SPAM): three counting, SPAM among the categories.
    const spam = 1 << CATEGORIES.indexOf("SPAM");
    const row = (ip: string) => rows<{ total: number; spam: number }>(f.store, "SELECT total_reports AS total, categories_mask & ? AS spam FROM addresses WHERE ip = ?", spam, ip)[0];
    expect(row("203.0.113.5")).toEqual({ total: 3, spam });
    expect(row("198.51.100.7")).toEqual({ total: 2, spam: 0 });
    // The bulk path (these addresses are in two rows each: four reports): 11.0.0.0/24 is listed, 11.0.1.0/24 not.
    expect(row("11.0.0.7")).toEqual({ total: 5, spam });
    expect(row("11.0.1.7")).toEqual({ total: 4, spam: 0 });
    const doctor = await cli(["doctor"]);
    expect(doctor.stdout).toMatch(/ok +index against reports/);
    expect(doctor.code).toBe(0);
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
