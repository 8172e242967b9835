// The streamed import: CSV records read from pieces split anywhere, and a large import (the reports indexes
// dropped, the addresses scored from one walk of the rebuilt address index) storing exactly what the per-address
// path stores: the same reports, transitions, address rows and scores, index records and announcements; the
// schema as it was; and nothing at all when the import fails part-way.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { CATEGORIES } from "../../../../src/domain/categories";
import type { Listing } from "../../../../src/domain/feeds";
import { formatIpv4, formatIpv6, type Ip, parseIp } from "../../../../src/domain/ip";
import { DAY_MS, DEFAULT_SCORING_PARAMETERS } from "../../../../src/domain/scoring";
import { createAddressScorer } from "../../../../src/services/reports/scorer";
import { csvRecords, CsvRecordStream, importReports, importReportStream, parseReportCsv } from "../../../../src/services/reports/import";
import { rng } from "../../../support/random";
import { createReportFixture, indexed, type ReportFixture, rows } from "./reports-fixture";

const NOW = Date.parse("2026-11-21T08:00:00.000Z");

describe("CsvRecordStream", () => {
  const text = '\uFEFFIP,Categories,ReportDate,Comment\r\n1.2.3.4,"18,22",2026-11-01T00:00:00Z,"say ""hi""\r\nover lines"\r\n\r\n5.6.7.8,7,x,\rlast,"a""",b\nbad"quote,1,2,3\n"never closed,\n';
  const expected = [...csvRecords(text)];

  test("pieces split at any one point give the records of the whole text", () => {
    expect(expected.map((r) => r.line)).toEqual([1, 2, 5, 6, 7, 8]);
    for (let at = 0; at <= text.length; at++) {
      const stream = new CsvRecordStream();
      const got = [...stream.push(text.slice(0, at)), ...stream.push(text.slice(at)), ...stream.push("", true)];
      expect({ at, got }).toEqual({ at, got: expected });
    }
  });

  test("a quote never closed early in a long text: pieces give the records of the whole text", () => {
    const long = `a,b\nc,"open${",x\n".repeat(50_000)}`;
    const stream = new CsvRecordStream();
    const got: ReturnType<typeof stream.push> = [];
    for (let at = 0; at < long.length; at += 1_000) got.push(...stream.push(long.slice(at, at + 1_000)));
    got.push(...stream.push("", true));
    expect(got).toEqual([...csvRecords(long)]);
    expect(got.map((r) => r.line)).toEqual([1, 2]);
  });

  test("pieces of one character give the records of the whole text", () => {
    const stream = new CsvRecordStream();
    const got = [...text].flatMap((c) => stream.push(c));
    got.push(...stream.push("", true));
    expect(got).toEqual(expected);
  });
});

/** A CSV of `count` rows over fewer addresses (so addresses repeat across pieces), IPv4 and IPv6, with a few bad rows. */
function csvOf(count: number, addresses: string[], seed: number): string {
  const next = rng(seed);
  const lines = ["IP,Categories,ReportDate,Comment"];
  for (let i = 0; i < count; i++) {
    const ip = addresses[next() % addresses.length];
    const categories = Array.from({ length: 1 + (next() % 3) }, () => 1 + (next() % 23)).join(",");
    const date = new Date(NOW - (next() % (400 * 24)) * 3_600_000).toISOString(); // up to 400 days: some too old
    lines.push(i % 97 === 5 ? `${ip},99,${date},unknown category` : `${ip},"${categories}",${date},"row ${i}, seen"`);
  }
  return `${lines.join("\n")}\n`;
}

function addressesOf(count: number, seed: number): string[] {
  const next = rng(seed);
  return Array.from({ length: count }, (_, i) => (i % 10 === 9 ? formatIpv6([0x2a00, next() & 0xffff, 0, 0, 0, 0, 0, next() & 0xffff]) : formatIpv4(0x0b000000 + (next() & 0xffffff))));
}

/** Pieces of random sizes, cut anywhere (inside records and quotes too). */
async function* piecesOf(text: string, seed: number): AsyncGenerator<string> {
  const next = rng(seed);
  for (let at = 0; at < text.length; ) {
    const size = 1 + (next() % 700);
    yield text.slice(at, at + size);
    at += size;
  }
}

const schemaOf = (f: ReportFixture) => rows(f.store, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name");

describe("importReportStream", () => {
  let bulk: ReportFixture;
  let each: ReportFixture;
  beforeEach(() => {
    bulk = createReportFixture();
    each = createReportFixture();
  });
  afterEach(() => {
    bulk.close();
    each.close();
  });

  /** The same history in a store: another reporter's reports on some of the addresses, some verified, some rejected. */
  function history(f: ReportFixture, addresses: string[]): { reporter: number } {
    const other = f.addUser();
    const admin = f.addUser();
    const reporter = f.addUser();
    const earlier = parseReportCsv(csvOf(300, addresses.slice(0, 40), 7), { nowMs: NOW - 2 * DAY_MS });
    importReports({ store: f.store, scorer: createAddressScorer(f.store, DEFAULT_SCORING_PARAMETERS), changes: f.publisher }, { reporterId: other, rows: earlier.rows, nowMs: NOW - 2 * DAY_MS });
    const ids = rows<{ id: number }>(f.store, "SELECT id FROM reports ORDER BY id").map((r) => r.id);
    for (const id of ids.filter((id) => id % 3 === 0)) f.states.setStatus(id, "verified", admin, NOW - DAY_MS);
    for (const id of ids.filter((id) => id % 7 === 0)) f.states.setStatus(id, "rejected", admin, NOW - DAY_MS);
    f.announced.length = 0;
    return { reporter };
  }

  const everything = (f: ReportFixture) => ({
    reports: rows(f.store, "SELECT * FROM reports ORDER BY id"),
    transitions: rows(f.store, "SELECT * FROM report_transitions ORDER BY id"),
    addresses: rows(f.store, "SELECT * FROM addresses ORDER BY ip"),
    changeLog: rows<{ ip: string }>(f.store, "SELECT ip FROM address_change_log").map((r) => r.ip).sort(),
    schema: schemaOf(f),
  });

  test.each([
    ["parsed and scored on worker threads", true, "worker"],
    ["parsed and scored on the importing thread", false, "this thread"],
  ] as const)("a large import over several pieces, %s, stores what the per-address path stores, to the bit", async (_, onWorkers, scoring) => {
    const addresses = addressesOf(400, 3);
    const text = csvOf(3_000, addresses, 11);
    const before = schemaOf(bulk);
    const { reporter } = history(bulk, addresses);
    history(each, addresses);

    // The per-address path: the whole file parsed, every report written into the indexes, each address rescored.
    const parsed = parseReportCsv(text, { nowMs: NOW });
    const perAddress = importReports({ store: each.store, scorer: createAddressScorer(each.store, DEFAULT_SCORING_PARAMETERS), changes: each.publisher }, { reporterId: reporter, rows: parsed.rows, nowMs: NOW, severity: 4 });

    const bad: number[] = [];
    const phases = new Set<string>();
    const streamed = await importReportStream(
      { store: bulk.store, scorer: createAddressScorer(bulk.store, DEFAULT_SCORING_PARAMETERS), changes: bulk.publisher },
      piecesOf(text, 5),
      { reporterId: reporter, nowMs: NOW, severity: 4, bulkFromReports: 500, scoringWorker: onWorkers, parseWorker: onWorkers, addressesPerBatch: 50, onBadRow: (b) => bad.push(b.line), onProgress: (phase) => phases.add(phase) },
    );

    expect(streamed).toEqual({ ...perAddress, badRows: parsed.bad.length, scoring });
    expect(perAddress.addresses).toBe(400);
    expect(bad).toEqual(parsed.bad.map((b) => b.line));
    expect([...phases]).toEqual(["rows", "addresses", "indexes"]);
    const got = everything(bulk);
    expect(got).toEqual(everything(each));
    // Report ids follow the file: row by row, each row's categories in the order the field names them.
    expect(rows(bulk.store, "SELECT ip, category, description, created_at AS at FROM reports WHERE reporter_id = ? ORDER BY id", reporter)).toEqual(
      parsed.rows.flatMap((r) => r.categories.map((category) => ({ ip: r.ip.text, category, description: r.comment, at: r.reportedAtMs }))),
    );
    // The indexes and triggers dropped for the import are back, as they were.
    expect(got.schema).toEqual(before);
    // Older reports took part: some addresses hold verified reports of the other reporter next to the imported ones.
    expect(rows(bulk.store, "SELECT count(*) AS n FROM addresses WHERE verified_reports > 0 AND total_reports > verified_reports")).not.toEqual([{ n: 0 }]);
    for (const ip of addresses) expect(indexed(bulk.index, ip)).toEqual(indexed(each.index, ip));
    expect(bulk.announced.sort()).toEqual(each.announced.sort());
  });

  test.each([
    ["on worker threads", true],
    ["on the importing thread", false],
  ] as const)("addresses inside listed networks count their listings in a large import (%s) as in the per-address path", async (_, onWorkers) => {
    const addresses = addressesOf(300, 5);
    const text = csvOf(2_000, addresses, 17);
    const { reporter } = history(bulk, addresses);
    history(each, addresses);
    // Every third address is listed: by one feed, or by two (the second more severe, in another category).
    const listingsAround = (ip: Ip): Listing[] => {
      const n = addresses.indexOf(ip.text);
      if (n % 3 !== 0) return [];
      const spam: Listing = { feed: "drop", category: "SPAM", severity: 4, listedAtMs: NOW - DAY_MS };
      return n % 2 === 0 ? [spam] : [spam, { feed: "firehol", category: "BRUTE_FORCE", severity: 5, listedAtMs: NOW - 2 * DAY_MS }];
    };
    const parsed = parseReportCsv(text, { nowMs: NOW });
    importReports({ store: each.store, scorer: createAddressScorer(each.store, DEFAULT_SCORING_PARAMETERS, { listingsAround }), changes: each.publisher }, { reporterId: reporter, rows: parsed.rows, nowMs: NOW, severity: 4 });
    await importReportStream(
      { store: bulk.store, scorer: createAddressScorer(bulk.store, DEFAULT_SCORING_PARAMETERS, { listingsAround }), changes: bulk.publisher },
      piecesOf(text, 6),
      { reporterId: reporter, nowMs: NOW, severity: 4, bulkFromReports: 500, scoringWorker: onWorkers, parseWorker: onWorkers, addressesPerBatch: 40 },
    );

    expect(everything(bulk)).toEqual(everything(each));
    for (const ip of addresses) expect(indexed(bulk.index, ip)).toEqual(indexed(each.index, ip));
    // The listings are in the rows: every row is what the scorer that sees them computes now, and a listed
    // address counts one more report per listing than its own.
    const check = createAddressScorer(bulk.store, DEFAULT_SCORING_PARAMETERS, { listingsAround, persist: false });
    const own = createAddressScorer(bulk.store, DEFAULT_SCORING_PARAMETERS, { persist: false });
    let listedSeen = 0;
    for (const row of rows<{ ip: string; reputation_score: number; total_reports: number; categories_mask: number }>(bulk.store, "SELECT ip, reputation_score, total_reports, categories_mask FROM addresses")) {
      const ip = parseIp(row.ip);
      const record = check.rescore(ip, NOW)!;
      expect({ ip: row.ip, score: row.reputation_score, total: row.total_reports, mask: row.categories_mask }).toEqual({ ip: row.ip, score: record.reputationScore, total: record.totalReports, mask: record.categoriesMask });
      const listings = listingsAround(ip).length;
      if (listings > 0) {
        listedSeen++;
        expect(row.total_reports).toBe((own.rescore(ip, NOW)?.totalReports ?? 0) + listings);
      }
    }
    expect(listedSeen).toBeGreaterThan(50);
  });

  test("all or nothing: a read that fails part-way, or a broken header, leaves the store as it was", async () => {
    const addresses = addressesOf(50, 9);
    const { reporter } = history(bulk, addresses);
    const stored = everything(bulk);
    const deps = { store: bulk.store, scorer: createAddressScorer(bulk.store, DEFAULT_SCORING_PARAMETERS), changes: bulk.publisher };
    async function* failing(): AsyncGenerator<string> {
      yield* piecesOf(csvOf(2_000, addresses, 13), 1);
      throw new Error("the disk went away");
    }
    await expect(importReportStream(deps, failing(), { reporterId: reporter, nowMs: NOW, bulkFromReports: 100 })).rejects.toThrow("the disk went away");
    expect(everything(bulk)).toEqual(stored);
    expect(bulk.announced).toEqual([]);

    for (const parseWorker of [false, true]) {
      await expect(importReportStream(deps, piecesOf("IP,Categories\n1.2.3.4,18\n", 1), { reporterId: reporter, nowMs: NOW, parseWorker })).rejects.toThrow("lacks the column ReportDate");
      expect(everything(bulk)).toEqual(stored);
    }

    // And the store takes the next import.
    const summary = await importReportStream(deps, piecesOf(csvOf(200, addresses, 17), 2), { reporterId: reporter, nowMs: NOW, bulkFromReports: 100 });
    expect(summary.reports).toBeGreaterThan(100);
    expect(schemaOf(bulk)).toEqual(stored.schema);
  });
});

test("CATEGORIES fit the byte the importer keeps per report", () => {
  expect(CATEGORIES.length).toBeLessThanOrEqual(256);
});
