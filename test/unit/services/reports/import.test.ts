// The AbuseIPDB bulk-report import: the CSV reader (quoted commas, line breaks, doubled quotes, line numbers),
// the row rules, the one-transaction write with its rescoring, and the CLI command end to end.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DAY_MS } from "../../../../src/domain/scoring";
import { createAddressScorer } from "../../../../src/services/reports/scorer";
import { csvRecords, importReports, parseIsoDateTime, parseReportCsv } from "../../../../src/services/reports/import";
import { DEFAULT_SCORING_PARAMETERS } from "../../../../src/domain/scoring";
import { createReportFixture, indexed, type ReportFixture, rows } from "./reports-fixture";

const NOW = Date.parse("2026-11-21T08:00:00.000Z");

describe("csvRecords", () => {
  const table: { name: string; text: string; records: { line: number; fields: string[]; error?: string }[] }[] = [
    { name: "plain lines", text: "a,b,c\nd,e,f\n", records: [{ line: 1, fields: ["a", "b", "c"] }, { line: 2, fields: ["d", "e", "f"] }] },
    { name: "no final line break", text: "a,b\nc,d", records: [{ line: 1, fields: ["a", "b"] }, { line: 2, fields: ["c", "d"] }] },
    { name: "CRLF and lone CR", text: "a,b\r\nc,d\re,f", records: [{ line: 1, fields: ["a", "b"] }, { line: 2, fields: ["c", "d"] }, { line: 3, fields: ["e", "f"] }] },
    { name: "a quoted comma", text: 'a,"18,22",c', records: [{ line: 1, fields: ["a", "18,22", "c"] }] },
    { name: "doubled quotes", text: 'a,"say ""hi""",""', records: [{ line: 1, fields: ["a", 'say "hi"', ""] }] },
    {
      name: "a line break inside quotes counts as a line",
      text: 'a,"one\ntwo\r\nthree",c\nnext,x,y',
      records: [{ line: 1, fields: ["a", "one\ntwo\r\nthree", "c"] }, { line: 4, fields: ["next", "x", "y"] }],
    },
    { name: "empty fields and a trailing comma", text: ",,\na,", records: [{ line: 1, fields: ["", "", ""] }, { line: 2, fields: ["a", ""] }] },
    { name: "blank lines are skipped", text: "\na,b\n\n   \nc,d\n\n", records: [{ line: 2, fields: ["a", "b"] }, { line: 5, fields: ["c", "d"] }] },
    { name: "a byte-order mark is ignored", text: "\uFEFFIP,Categories\n", records: [{ line: 1, fields: ["IP", "Categories"] }] },
    {
      name: "text after a closing quote",
      text: '"a"b,c\nd,e',
      records: [{ line: 1, fields: ["ab", "c"], error: "a quoted field must be followed by a comma or the end of the line" }, { line: 2, fields: ["d", "e"] }],
    },
    {
      name: "a quote inside an unquoted field",
      text: 'a"b,c\nd,e',
      records: [{ line: 1, fields: ['a"b', "c"], error: "a quote inside an unquoted field (quote the whole field and double the quote)" }, { line: 2, fields: ["d", "e"] }],
    },
    {
      name: "a quote never closed swallows the rest",
      text: 'a,b\nc,"d\ne,f',
      records: [{ line: 1, fields: ["a", "b"] }, { line: 2, fields: ["c", "d\ne,f"], error: "a quoted field is never closed (the rest of the file is part of it)" }],
    },
  ];
  for (const { name, text, records } of table) {
    test(name, () => expect([...csvRecords(text)]).toEqual(records));
  }
});

describe("parseIsoDateTime", () => {
  const table: [string, number | null][] = [
    ["2026-11-21T08:00:00Z", NOW],
    ["2026-11-21T08:00:00.000Z", NOW],
    ["2026-11-21T08:00:00.5Z", NOW + 500],
    ["2026-11-21T08:00:00.123456Z", NOW + 123],
    ["2026-11-21t08:00:00z", NOW],
    ["2026-11-21 08:00:00Z", NOW],
    ["2026-11-21T08:00Z", NOW],
    ["2026-11-21T04:00:00-04:00", NOW],
    ["2026-11-21T09:30:00+0130", NOW],
    ["2024-02-29T00:00:00Z", Date.parse("2024-02-29T00:00:00Z")],
    ["2026-11-21T08:00:00", null], // no offset: ambiguous
    ["2026-11-21", null],
    ["2025-02-29T00:00:00Z", null],
    ["2026-13-01T00:00:00Z", null],
    ["2026-11-21T24:00:00Z", null],
    ["2026-11-21T08:60:00Z", null],
    ["2026-11-21T08:00:60Z", null],
    ["2026-11-21T08:00:00+24:00", null],
    ["1700000000", null],
    ["", null],
  ];
  for (const [text, expected] of table) test(JSON.stringify(text), () => expect(parseIsoDateTime(text)).toBe(expected));
});

describe("parseReportCsv", () => {
  const parse = (text: string) => parseReportCsv(text, { nowMs: NOW });

  test("AbuseIPDB's own layout: header, numbers, several categories in one quoted field, comments with commas", () => {
    const parsed = parse(
      [
        "IP,Categories,ReportDate,Comment",
        '203.0.113.7,"18,22",2026-11-20T08:00:00Z,"Failed password for root, 200 times"',
        "2001:DB8::1,14,2026-11-21T07:00:00+01:00,",
        '198.51.100.9,"brute-force, SSH ,22",2026-11-01T00:00:00Z,"multi',
        'line ""comment"""',
      ].join("\n"),
    );
    expect(parsed.header).toBe(true);
    expect(parsed.bad).toEqual([]);
    expect(parsed.rows.map((r) => ({ line: r.line, ip: String(r.ip.text), categories: r.categories, at: new Date(r.reportedAtMs).toISOString(), comment: r.comment }))).toEqual([
      { line: 2, ip: "203.0.113.7", categories: ["BRUTE_FORCE", "SSH"], at: "2026-11-20T08:00:00.000Z", comment: "Failed password for root, 200 times" },
      { line: 3, ip: "2001:db8::1", categories: ["PORT_SCAN"], at: "2026-11-21T06:00:00.000Z", comment: "" },
      { line: 4, ip: "198.51.100.9", categories: ["BRUTE_FORCE", "SSH"], at: "2026-11-01T00:00:00.000Z", comment: 'multi\nline "comment"' },
    ]);
  });

  test("without a header the order is IP,Categories,ReportDate[,Comment]", () => {
    const parsed = parse("203.0.113.7,10 ,2026-11-20T08:00:00Z\n203.0.113.8,\"10,11,12\",2026-11-20T08:00:00Z,spam\n");
    expect(parsed.header).toBe(false);
    // 10, 11 and 12 are all SPAM: one category.
    expect(parsed.rows.map((r) => [r.line, r.ip.text, r.categories, r.comment])).toEqual([
      [1, "203.0.113.7", ["SPAM"], ""],
      [2, "203.0.113.8", ["SPAM"], "spam"],
    ]);
  });

  test("a header may order the columns as it likes and leave out Comment", () => {
    const parsed = parse("reportdate,ip,CATEGORIES\n2026-11-20T08:00:00Z,203.0.113.7,ddos\n");
    expect(parsed.rows.map((r) => [r.ip.text, r.categories, r.comment])).toEqual([["203.0.113.7", ["DDOS"], ""]]);
  });

  test("a header without a required column is refused as a whole", () => {
    expect(() => parse("IP,Comment\n203.0.113.7,x\n")).toThrow("The header line lacks the columns Categories, ReportDate");
  });

  test("bad rows are listed with their line numbers and reasons; good rows around them are kept", () => {
    const long = "x".repeat(1025);
    const parsed = parse(
      [
        "IP,Categories,ReportDate,Comment", // 1
        "203.0.113.1,18,2026-11-20T08:00:00Z,ok", // 2
        "010.0.0.1,18,2026-11-20T08:00:00Z,", // 3
        "127.0.0.1,18,2026-11-20T08:00:00Z,", // 4
        "203.0.113.2,99,2026-11-20T08:00:00Z,", // 5
        '203.0.113.3,"18,nonsense",2026-11-20T08:00:00Z,', // 6
        "203.0.113.4,,2026-11-20T08:00:00Z,", // 7
        "203.0.113.5,18,2026-11-21T08:00:01Z,", // 8
        "203.0.113.6,18,2025-11-21T07:59:59Z,", // 9
        "203.0.113.7,18,yesterday,", // 10
        "203.0.113.8,18,2026-11-20T08:00:00Z,a,b", // 11
        `203.0.113.9,18,2026-11-20T08:00:00Z,${long}`, // 12
        '"203.0.113.10,18,2026-11-20T08:00:00Z,"', // 13
        "not-an-ip,nonsense,never,", // 14
        "203.0.113.11,18,2026-11-21T08:00:00Z,exactly now", // 15
      ].join("\n"),
    );
    expect(parsed.rows.map((r) => [r.line, String(r.ip.text)])).toEqual([
      [2, "203.0.113.1"],
      [15, "203.0.113.11"],
    ]);
    expect(parsed.bad).toEqual([
      { line: 3, reason: 'IP "010.0.0.1": leading zeros in an IPv4 octet are not allowed (010 could be octal or decimal)' },
      { line: 4, reason: expect.stringMatching(/^IP 127\.0\.0\.1: /) },
      { line: 5, reason: 'unknown category "99" (AbuseIPDB numbers 1-23 or category names)' },
      { line: 6, reason: 'unknown category "nonsense" (AbuseIPDB numbers 1-23 or category names)' },
      { line: 7, reason: "no category" },
      { line: 8, reason: "ReportDate 2026-11-21T08:00:01Z is in the future" },
      { line: 9, reason: "ReportDate 2025-11-21T07:59:59Z is older than the retention period (365 days): the report would never count" },
      { line: 10, reason: 'ReportDate "yesterday" is not an ISO 8601 date and time with a UTC offset (e.g. 2026-11-21T08:00:00Z)' },
      { line: 11, reason: "expected 4 fields as in the header, found 5; quote a field that holds a comma" },
      { line: 12, reason: "Comment is longer than 1024 characters" },
      { line: 13, reason: "expected 4 fields as in the header, found 1; quote a field that holds a comma" },
      {
        line: 14,
        reason:
          'IP "not-an-ip": not an IPv4 or IPv6 address; unknown category "nonsense" (AbuseIPDB numbers 1-23 or category names); ReportDate "never" is not an ISO 8601 date and time with a UTC offset (e.g. 2026-11-21T08:00:00Z)',
      },
    ]);
  });
});

describe("importReports", () => {
  let f: ReportFixture;
  beforeEach(() => {
    f = createReportFixture();
  });
  afterEach(() => f.close());

  test("every category of every good row is one report, in one transaction; each address rescored once", () => {
    const reporter = f.addUser();
    const parsed = parseReportCsv(
      [
        '203.0.113.7,"18,22",2026-10-22T08:00:00Z,old', // 30 days old
        "203.0.113.7,14,2026-11-21T08:00:00Z,fresh",
        "198.51.100.1,7,2026-11-20T08:00:00Z,",
      ].join("\n"),
      { nowMs: NOW },
    );
    const progress: [number, number][] = [];
    const summary = importReports(
      { store: f.store, scorer: createAddressScorer(f.store, DEFAULT_SCORING_PARAMETERS), changes: f.publisher },
      { reporterId: reporter, rows: parsed.rows, nowMs: NOW, onProgress: (d, t) => progress.push([d, t]) },
    );
    expect(summary).toEqual({ rows: 3, reports: 4, addresses: 2 });
    expect(progress.at(-1)).toEqual([6, 6]);
    expect(rows(f.store, "SELECT ip, reporter_id, category, severity, description, status, source, created_at FROM reports ORDER BY id")).toEqual([
      { ip: "203.0.113.7", reporter_id: reporter, category: "BRUTE_FORCE", severity: 3, description: "old", status: "pending", source: "import", created_at: NOW - 30 * DAY_MS },
      { ip: "203.0.113.7", reporter_id: reporter, category: "SSH", severity: 3, description: "old", status: "pending", source: "import", created_at: NOW - 30 * DAY_MS },
      { ip: "203.0.113.7", reporter_id: reporter, category: "PORT_SCAN", severity: 3, description: "fresh", status: "pending", source: "import", created_at: NOW },
      { ip: "198.51.100.1", reporter_id: reporter, category: "PHISHING", severity: 3, description: "", status: "pending", source: "import", created_at: NOW - DAY_MS },
    ]);
    expect(rows(f.store, "SELECT count(*) AS n FROM report_transitions WHERE from_status IS NULL AND to_status = 'pending' AND at = ? AND reason = 'import'", NOW)).toEqual([{ n: 4 }]);
    // No credits, no events, no duplicate rule (two reports of .7 by one reporter at one time).
    expect(rows(f.store, "SELECT count(*) AS n FROM credit_ledger")).toEqual([{ n: 0 }]);
    expect(rows(f.store, "SELECT count(*) AS n FROM outbox")).toEqual([{ n: 0 }]);
    // .7: two 30-day-old severity-3 reports (0.3 each) and a fresh one (0.6): Σw = 1.2, round(100 × e^(−0.8)) = 45
    // .1: one report a day old: 0.6 × 0.5^(1/30) = 0.58637, round(100 × e^(−0.39091)) = 68
    expect(rows(f.store, "SELECT ip, reputation_score, total_reports, first_seen, last_seen, last_category FROM addresses ORDER BY ip")).toEqual([
      { ip: "198.51.100.1", reputation_score: 68, total_reports: 1, first_seen: NOW - DAY_MS, last_seen: NOW - DAY_MS, last_category: "PHISHING" },
      { ip: "203.0.113.7", reputation_score: 45, total_reports: 3, first_seen: NOW - 30 * DAY_MS, last_seen: NOW, last_category: "PORT_SCAN" },
    ]);
    expect(indexed(f.index, "203.0.113.7")?.reputationScore).toBe(45);
    expect(f.announced.sort()).toEqual(["198.51.100.1", "203.0.113.7"]);
  });

  test("the severity given applies to every report", () => {
    const reporter = f.addUser();
    const parsed = parseReportCsv("203.0.113.7,18,2026-11-21T08:00:00Z,", { nowMs: NOW });
    importReports({ store: f.store, scorer: createAddressScorer(f.store, DEFAULT_SCORING_PARAMETERS) }, { reporterId: reporter, rows: parsed.rows, nowMs: NOW, severity: 5 });
    // severity 5 fresh: round(100 × e^(−1/1.5)) = 51
    expect(rows(f.store, "SELECT severity FROM reports")).toEqual([{ severity: 5 }]);
    expect(rows(f.store, "SELECT reputation_score FROM addresses")).toEqual([{ reputation_score: 51 }]);
  });
});

describe("abuse-intel import reports", () => {
  let f: ReportFixture;
  beforeEach(() => {
    f = createReportFixture();
  });
  afterEach(() => f.close());

  async function run(args: string[]) {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "../../../../src/main.ts"), ...args], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" },
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  }

  test("imports the good rows, lists the bad ones with line numbers, prints a summary", async () => {
    f.addUser("importer@example.test");
    const yesterday = new Date(Date.now() - DAY_MS).toISOString();
    const file = join(f.dir, "reports.csv");
    writeFileSync(file, `IP,Categories,ReportDate,Comment\n203.0.113.7,"18,22",${yesterday},"a, b"\n203.0.113.8,99,${yesterday},\nnope,18,${yesterday},\n`);
    const { stdout, stderr, code } = await run(["import", "reports", file, "--reporter", "Importer@example.test", "--data-dir", f.dir]);
    expect(code).toBe(0);
    expect(stdout).toBe("imported 2 reports from 1 row (1 address rescored); skipped 2 bad rows\n");
    // Not a terminal: no progress bar, only the bad rows.
    expect(stderr).toBe('line 3: unknown category "99" (AbuseIPDB numbers 1-23 or category names)\nline 4: IP "nope": not an IPv4 or IPv6 address\n');
    expect(rows(f.store, "SELECT ip, category, source FROM reports ORDER BY id")).toEqual([
      { ip: "203.0.113.7", category: "BRUTE_FORCE", source: "import" },
      { ip: "203.0.113.7", category: "SSH", source: "import" },
    ]);
  });

  test("an unknown reporter, a missing file and a missing --reporter are errors (exit 2), nothing imported", async () => {
    const file = join(f.dir, "reports.csv");
    writeFileSync(file, "203.0.113.7,18,2026-01-01T00:00:00Z,\n");
    const unknown = await run(["import", "reports", file, "--reporter", "nobody@example.test", "--data-dir", f.dir]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("no account with the email nobody@example.test");
    const missing = await run(["import", "reports", join(f.dir, "nope.csv"), "--reporter", "x@example.test", "--data-dir", f.dir]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no such file");
    const noReporter = await run(["import", "reports", file, "--data-dir", f.dir]);
    expect(noReporter.code).toBe(2);
    expect(noReporter.stderr).toContain("--reporter EMAIL is required");
    expect(rows(f.store, "SELECT count(*) AS n FROM reports")).toEqual([{ n: 0 }]);
  });

  test("a file with rows but none good exits 1", async () => {
    f.addUser("importer2@example.test");
    const file = join(f.dir, "bad.csv");
    writeFileSync(file, "203.0.113.7,99,2026-01-01T00:00:00Z,\n");
    const { code, stdout } = await run(["import", "reports", file, "--reporter", "importer2@example.test", "--data-dir", f.dir]);
    expect(code).toBe(1);
    expect(stdout).toBe("imported 0 reports from 0 rows (0 addresses rescored); skipped 1 bad row\n");
  });
});
