// A database made before migration 0009 (every address summed by 0008's triggers) is upgraded by opening it: the
// addresses with more than 64 reports in their sums stay summed with the sums they had, the others' sums go, and
// both score as the formula says, before and after more reports, verifications and deletions.

import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { parseIp } from "../../../src/domain/ip";
import { DEFAULT_SCORING_PARAMETERS, DAY_MS, nextRescoreDueMs, scoreReports, type ScoredReport } from "../../../src/domain/scoring";
import { createAddressScorer } from "../../../src/services/reports/scorer";
import { databasePath, inTransaction, openStore, type Store } from "../../../src/store/database";

const root = join(import.meta.dir, "../../..");
const T0 = Date.parse("2026-06-01T00:00:00Z");
const FLOODED = parseIp("203.0.113.9");
const QUIET = parseIp("203.0.113.10");
let work: string;
let store: Store | null = null;

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), "abuse-intel-sums-upgrade-"));
});
afterEach(() => {
  store?.close();
  store = null;
  rmSync(work, { recursive: true, force: true });
});

/** drizzle/ as it was up to and including `lastTag`, for the stock migrator. */
function migrationsUpTo(lastTag: string): string {
  const folder = join(work, "drizzle");
  cpSync(join(root, "drizzle"), folder, { recursive: true });
  const journalPath = join(folder, "meta/_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
  const last = journal.entries.findIndex((e) => e.tag === lastTag);
  expect(last).toBeGreaterThan(0);
  journal.entries = journal.entries.slice(0, last + 1);
  writeFileSync(journalPath, JSON.stringify(journal));
  return folder;
}

const reportsOf = (s: Store, ip: string): ScoredReport[] =>
  s.sqlite.query("SELECT id, reporter_id AS reporterId, severity, created_at AS createdAtMs, status, category FROM reports WHERE ip = ?").all(ip) as ScoredReport[];

function expectFormula(s: Store, ip: typeof FLOODED, nowMs: number): void {
  const scorer = createAddressScorer(s, DEFAULT_SCORING_PARAMETERS, { rebuildSumsAtMs: nowMs });
  const { rescoreDueMs } = scorer.evaluate(ip, nowMs);
  const record = inTransaction(s, () => scorer.rescore(ip, nowMs));
  const expected = scoreReports(reportsOf(s, ip.text), nowMs);
  expect(record).not.toBeNull();
  expect([record!.reputationScore, record!.totalReports, record!.verifiedReports, record!.firstSeenMs, record!.lastSeenMs]).toEqual([
    expected.reputationScore,
    expected.totalReports,
    expected.verifiedReports,
    expected.firstSeenMs!,
    expected.lastSeenMs!,
  ]);
  expect(Math.abs(rescoreDueMs! - nextRescoreDueMs(reportsOf(s, ip.text), nowMs)!)).toBeLessThanOrEqual(1);
}

test("opening a database of migration 0008 keeps the sums of the flooded address only, and both score as the formula", () => {
  const dataDir = join(work, "data");
  mkdirSync(dataDir);
  const old = new Database(databasePath(dataDir), { create: true });
  migrate(drizzle({ client: old }), { migrationsFolder: migrationsUpTo("0008_ingest-running-score-sums") });
  old.query("INSERT INTO users (id, email, password_hash, created_at, updated_at) VALUES (1, 'a@example.com', 'x', 0, 0), (2, 'b@example.com', 'x', 0, 0)").run();
  const insert = old.query(
    "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, ?, ?, ?, '', 'pending', 'api', ?, ?)",
  );
  for (let i = 0; i < 300; i++) insert.run(FLOODED.text, 1 + (i % 2), i % 3 === 0 ? "SSH" : "Spam", 1 + (i % 5), T0 - i * 3_600_000, T0);
  for (let i = 0; i < 3; i++) insert.run(QUIET.text, 1 + (i % 2), "SSH", 4, T0 - i * DAY_MS, T0);
  const floodedSums = old.query("SELECT * FROM reporter_score_sums WHERE ip = ? ORDER BY reporter_id").all(FLOODED.text);
  expect(old.query("SELECT count(*) AS n FROM reporter_score_sums WHERE ip = ?").get(QUIET.text)).toEqual({ n: 2 });
  old.close();

  store = openStore(dataDir);
  const s = store;
  expect(s.sqlite.query("SELECT ip FROM score_sum_addresses").all()).toEqual([{ ip: FLOODED.text }]);
  expect(s.sqlite.query("SELECT * FROM reporter_score_sums WHERE ip = ? ORDER BY reporter_id").all(FLOODED.text)).toEqual(floodedSums);
  expect(s.sqlite.query("SELECT (SELECT count(*) FROM reporter_score_sums WHERE ip = ?1) + (SELECT count(*) FROM address_category_counts WHERE ip = ?1) AS n").get(QUIET.text)).toEqual({ n: 0 });
  expectFormula(s, FLOODED, T0);
  expectFormula(s, QUIET, T0);

  // The upgraded triggers keep the flooded address's sums through new reports, a verification and a deletion;
  // the quiet one's reports write none.
  const again = s.sqlite.query(
    "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, 2, 'DDoS', 5, '', 'pending', 'api', ?, ?)",
  );
  for (const ip of [FLOODED, QUIET]) again.run(ip.text, T0 + 1_000, T0 + 1_000);
  s.sqlite.query("UPDATE reports SET status = 'verified' WHERE id = (SELECT min(id) FROM reports WHERE ip = ?)").run(FLOODED.text);
  s.sqlite.query("DELETE FROM reports WHERE id = (SELECT max(id) FROM reports WHERE ip = ? AND reporter_id = 1)").run(FLOODED.text);
  expect(s.sqlite.query("SELECT count(*) AS n FROM reporter_score_sums WHERE ip = ?").get(QUIET.text)).toEqual({ n: 0 });
  expectFormula(s, FLOODED, T0 + 2_000);
  expectFormula(s, QUIET, T0 + 2_000);
  expectFormula(s, FLOODED, T0 + 40 * DAY_MS);
});
