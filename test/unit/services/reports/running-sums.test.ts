// The scorer's two ways (migrations 0008, 0009; score-sums.ts, running-sums.ts, scorer.ts) against contract 5.7
// computed from scratch: random report histories on two addresses (many reporters and one flooding reporter;
// verifications, rejections, the expire job, clear-address, reports dated long ago, time moving on and back,
// restarts), scored alone and together; after each step the record the scorer writes equals scoreReports over
// every report of the address in the table at that time, on either side of the sums threshold and across it.
//
// Tolerance: Σw from the sums differs from the formula's by rounding only, at most 1e-9 × (1 + Σ|term|); the
// integer score and the risk level are therefore equal except where the formula's 100·exp(−Σw/scale) lies within
// 1e-6 of a .5 (the property skips those rare draws; none came up in the runs made); the rescore due time is
// the same millisecond or the next. Counts, categories and first/last seen are exact. Below the threshold the
// scorer reads the reports and the formula's answer is exact.

import { afterEach, beforeEach, expect, test } from "bun:test";
import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CATEGORIES, categoryBit, type Category } from "../../../../src/domain/categories";
import { parseIp } from "../../../../src/domain/ip";
import { DAY_MS, DEFAULT_SCORING_PARAMETERS, nextRescoreDueMs, resolveScoringParameters, retentionCutoffMs, scoreReports, type ReportStatus, type ScoredReport, type ScoringParameters, type Severity } from "../../../../src/domain/scoring";
import { createAddressScorer } from "../../../../src/services/reports/scorer";
import { importReportStream } from "../../../../src/services/reports/import";
import { AddressReports } from "../../../../src/store/address-reports";
import { databasePath, openStore, type Store, inTransaction } from "../../../../src/store/database";
import { SUMS_ABOVE_REPORTS } from "../../../../src/domain/running-sums";
import type { Ip } from "../../../../src/domain/ip";

const IP = parseIp("198.51.100.7");
const OTHER = parseIp("198.51.100.8");
const ADDRESSES = [IP, OTHER] as const;
const T0 = Date.parse("2026-06-01T00:00:00Z");
let dir: string;
let store: Store;

const addUsers = (s: Store) => {
  for (let id = 1; id <= 8; id++) s.sqlite.query("INSERT INTO users (id, email, password_hash, created_at, updated_at) VALUES (?, ?, 'x', 0, 0)").run(id, `u${id}@example.com`);
};
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-running-sums-"));
  store = openStore(dir);
  addUsers(store);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

type Step =
  | { kind: "report"; address: number; reporter: number; severity: Severity; daysAgo: number; category: number; many: number }
  | { kind: "verify" | "reject"; address: number; pick: number }
  | { kind: "expire" }
  | { kind: "clear"; address: number; reporter: number | null }
  | { kind: "later"; days: number }
  | { kind: "earlier"; days: number }
  | { kind: "restart" };

const address = fc.integer({ min: 0, max: 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("report" as const), address, reporter: fc.integer({ min: 1, max: 8 }), severity: fc.integer({ min: 1, max: 5 }) as fc.Arbitrary<Severity>, daysAgo: fc.double({ min: 0, max: 400, noNaN: true }), category: fc.integer({ min: 0, max: 5 }), many: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 40 })) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom("verify" as const, "reject" as const), address, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("expire" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("clear" as const), address, reporter: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("later" as const), days: fc.double({ min: 0, max: 200, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("earlier" as const), days: fc.double({ min: 0, max: 30, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const) }) },
);

function allReports(ip: Ip = IP): ScoredReport[] {
  const rows = store.sqlite
    .query("SELECT id, reporter_id AS reporterId, severity, created_at AS createdAtMs, status, category FROM reports WHERE ip = ?")
    .all(ip.text) as { id: number; reporterId: number; severity: Severity; createdAtMs: number; status: ReportStatus; category: Category }[];
  return rows;
}

const nearHalf = (sumWeight: number, params: ScoringParameters) => Math.abs(((100 * Math.exp(-sumWeight / params.scale)) % 1) - 0.5) < 1e-6;

const isSummed = (ip: Ip) => store.sqlite.query("SELECT 1 FROM score_sum_addresses WHERE ip = ?").get(ip.text) !== null;
const sumRowsOf = (ip: Ip) =>
  (store.sqlite.query("SELECT (SELECT count(*) FROM reporter_score_sums WHERE ip = ?1) + (SELECT count(*) FROM address_category_counts WHERE ip = ?1) AS n").get(ip.text) as { n: number }).n;
const inWindow = (ip: Ip, nowMs: number, params: ScoringParameters) =>
  (store.sqlite.query("SELECT count(*) AS n FROM reports WHERE ip = ? AND created_at >= ?").get(ip.text, retentionCutoffMs(nowMs, params)) as { n: number }).n;

/** The scorer's record (as written) and due time equal the formula's for `ip` at `nowMs` (see the tolerance in the header). */
function expectRecordOfFormula(ip: Ip, params: ScoringParameters, nowMs: number, record: ReturnType<ReturnType<typeof createAddressScorer>["rescore"]>, rescoreDueMs: number | null): void {
  const reports = allReports(ip);
  const expected = scoreReports(reports, nowMs, params);
  if (expected.totalReports === 0) {
    expect(record).toBeNull();
    return;
  }
  expect(record).not.toBeNull();
  expect({ ...record!, reputationScore: 0 }).toEqual({
    reputationScore: 0,
    totalReports: expected.totalReports,
    verifiedReports: expected.verifiedReports,
    categoriesMask: expected.categoriesMask,
    lastCategoryBit: expected.lastCategory === null ? -1 : categoryBit(expected.lastCategory),
    firstSeenMs: expected.firstSeenMs!,
    lastSeenMs: expected.lastSeenMs!,
  });
  if (nearHalf(expected.sumWeight, params)) return;
  expect(record!.reputationScore).toBe(expected.reputationScore);
  const due = nextRescoreDueMs(reports, nowMs, params);
  expect(due).not.toBeNull();
  expect(Math.abs(rescoreDueMs! - due!)).toBeLessThanOrEqual(1);
}

function expectFormula(params: ScoringParameters, nowMs: number, scorer = createAddressScorer(store, params), ip: Ip = IP): void {
  const { rescoreDueMs } = scorer.evaluate(ip, nowMs);
  const record = inTransaction(store, () => scorer.rescore(ip, nowMs));
  expectRecordOfFormula(ip, params, nowMs, record, rescoreDueMs);
}

/** How often the property saw each side of the threshold, and an address crossing it (so a run that never did fails). */
const seen = { fromReports: 0, fromSums: 0, crossings: 0 };

function run(steps: Step[], params: ScoringParameters, sumsAboveReports: number): void {
  // Each history starts afresh, floors and summed addresses included (a floor from a later time would send every
  // score to the formula).
  store.sqlite.exec(
    "DELETE FROM report_transitions; DELETE FROM reports; DELETE FROM addresses; DELETE FROM reporter_score_sums; DELETE FROM address_category_counts; DELETE FROM score_sum_addresses",
  );
  let now = T0;
  const open = (rebuild: boolean) => ({
    deletions: new AddressReports(store),
    insert: store.sqlite.query(
      "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, ?, ?, ?, '', 'pending', 'api', ?, ?)",
    ),
    // After a restart, as the server makes its scorer (create-services.ts).
    scorer: createAddressScorer(store, params, rebuild ? { sumsAboveReports, rebuildSumsAtMs: now } : { sumsAboveReports }),
  });
  let { deletions, insert, scorer } = open(false);
  for (const [n, s] of steps.entries()) {
    let at = now;
    switch (s.kind) {
      case "report":
        for (let i = 0; i < s.many; i++) {
          const created = Math.floor(now - s.daysAgo * DAY_MS) - i * 60_000;
          insert.run(ADDRESSES[s.address]!.text, s.reporter, CATEGORIES[s.category]!, s.severity, created, now);
        }
        break;
      case "verify":
      case "reject": {
        const ids = store.sqlite.query("SELECT id FROM reports WHERE ip = ? AND status = 'pending' ORDER BY id").all(ADDRESSES[s.address]!.text) as { id: number }[];
        if (ids.length > 0) store.sqlite.query("UPDATE reports SET status = ?, status_changed_at = ? WHERE id = ?").run(s.kind === "verify" ? "verified" : "rejected", now, ids[s.pick % ids.length]!.id);
        break;
      }
      case "expire":
        store.sqlite.query("UPDATE reports SET status = 'expired' WHERE status IN ('pending', 'verified') AND created_at < ?").run(retentionCutoffMs(now, params));
        break;
      case "clear":
        inTransaction(store, () => deletions.deleteOf(ADDRESSES[s.address]!.text, s.reporter, now));
        break;
      case "later":
        now += Math.floor(s.days * DAY_MS);
        at = now;
        break;
      case "earlier":
        at = now - Math.floor(s.days * DAY_MS);
        break;
      case "restart":
        store.close();
        store = openStore(dir);
        ({ deletions, insert, scorer } = open(true));
        break;
    }
    const before = ADDRESSES.map(isSummed);
    const dues = ADDRESSES.map((ip) => scorer.evaluate(ip, at).rescoreDueMs);
    // Alone (one address's statements) and together (the batch's), in turn.
    const records = n % 2 === 0 ? inTransaction(store, () => scorer.rescoreAll(ADDRESSES.map((ip) => ({ ip, nowMs: at })))) : ADDRESSES.map((ip) => inTransaction(store, () => scorer.rescore(ip, at)));
    ADDRESSES.forEach((ip, k) => {
      expectRecordOfFormula(ip, params, at, records[k]!, dues[k]!);
      const summed = isSummed(ip);
      // Past the threshold an address is summed (once made, it stays); below it, a report writes no sums.
      if (inWindow(ip, at, params) > sumsAboveReports) expect(summed).toBe(true);
      if (!summed) expect(sumRowsOf(ip)).toBe(0);
      if (summed) seen.fromSums++;
      else seen.fromReports++;
      if (summed && !before[k]) seen.crossings++;
    });
  }
}

test("scores equal the formula's on random report histories on both sides of a small threshold (default parameters)", () => {
  Object.assign(seen, { fromReports: 0, fromSums: 0, crossings: 0 });
  fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => run(steps, DEFAULT_SCORING_PARAMETERS, 6)), { numRuns: 80 });
  expect(seen.fromReports).toBeGreaterThan(0);
  expect(seen.fromSums).toBeGreaterThan(0);
  expect(seen.crossings).toBeGreaterThan(0);
}, 240_000);

test("scores equal the formula's on random report histories with the server's threshold", () => {
  Object.assign(seen, { fromReports: 0, fromSums: 0, crossings: 0 });
  fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => run(steps, DEFAULT_SCORING_PARAMETERS, SUMS_ABOVE_REPORTS)), { numRuns: 60 });
  expect(seen.fromReports).toBeGreaterThan(0);
  expect(seen.crossings).toBeGreaterThan(0);
}, 240_000);

test("with other scoring parameters the server's scorer sums the reports again in its units, and the scores still match", () => {
  const params = resolveScoringParameters({ halfLifeDays: 7, severityWeights: { 5: 1.3 }, verifiedMultiplier: 3, retentionDays: 90 });
  // A scorer that may rebuild does (as the server's does at start); the tables then hold sums in its units.
  createAddressScorer(store, params, { rebuildSumsAtMs: T0 });
  const units = store.sqlite.query("SELECT half_life_ms AS h, weight_5 AS w5, verified_multiplier AS m FROM score_sum_params").get();
  expect(units).toEqual({ h: 7 * DAY_MS, w5: 1.3, m: 3 });
  Object.assign(seen, { fromReports: 0, fromSums: 0, crossings: 0 });
  fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 20 }), (steps) => run(steps, params, 6)), { numRuns: 40 });
  expect(seen.crossings).toBeGreaterThan(0);
}, 240_000);

test("a flood from one reporter: summed once past the threshold, the triggers keep its sum, and the score follows the formula", () => {
  const insert = store.sqlite.query(
    "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, 1, 'SSH', 3, '', 'pending', 'api', ?, ?)",
  );
  inTransaction(store, () => {
    for (let i = 0; i < 5_000; i++) insert.run(IP.text, T0 - i * 1_000, T0);
  });
  // Not summed yet: the reports were written with no sums beside them.
  expect(store.sqlite.query("SELECT count(*) AS n FROM reporter_score_sums").get()).toEqual({ n: 0 });
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0);
  expect(store.sqlite.query("SELECT reports FROM reporter_score_sums WHERE ip = ?").get(IP.text)).toEqual({ reports: 5_000 });
  inTransaction(store, () => {
    for (let i = 0; i < 1_000; i++) insert.run(IP.text, T0 + 1 + i, T0 + 1_000);
  });
  expect(store.sqlite.query("SELECT reports FROM reporter_score_sums WHERE ip = ?").get(IP.text)).toEqual({ reports: 6_000 });
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0 + 1_000);
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0 + 10 * DAY_MS);
}, 120_000);

test("an address of few reports is scored from them and writes nothing to the sums", () => {
  const insert = store.sqlite.query(
    "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, ?, 'SSH', 3, '', 'pending', 'api', ?, ?)",
  );
  for (let i = 0; i < SUMS_ABOVE_REPORTS; i++) insert.run(OTHER.text, 1 + (i % 8), T0 - i, T0);
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0, undefined, OTHER);
  expect(isSummed(OTHER)).toBe(false);
  expect(sumRowsOf(OTHER)).toBe(0);
  insert.run(OTHER.text, 1, T0, T0);
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0, undefined, OTHER);
  expect(isSummed(OTHER)).toBe(true);
});

test("a large import leaves an address of many reports summed (the sums a live report would have made), and one of few not", async () => {
  const lines = ["IP,Categories,ReportDate,Comment"];
  for (let i = 0; i < 300; i++) lines.push(`${IP.text},${i % 2 === 0 ? "18" : '"18,22"'},${new Date(T0 - 60_000 - i * 3_600_000).toISOString()},flood`);
  for (let i = 0; i < 5; i++) lines.push(`${OTHER.text},18,${new Date(T0 - 60_000 - i * DAY_MS).toISOString()},few`);
  async function* pieces() {
    yield `${lines.join("\n")}\n`;
  }
  const scorer = createAddressScorer(store, DEFAULT_SCORING_PARAMETERS);
  const summary = await importReportStream({ store, scorer }, pieces(), { reporterId: 3, nowMs: T0, severity: 4, bulkFromReports: 100, scoringWorker: false, parseWorker: false });
  expect(summary.scoring).toBe("this thread");
  expect(isSummed(IP)).toBe(true);
  expect(isSummed(OTHER)).toBe(false);
  expect(sumRowsOf(OTHER)).toBe(0);
  expect(store.sqlite.query("SELECT reports FROM reporter_score_sums WHERE ip = ?").get(IP.text)).toEqual({ reports: 450 });
  // Then live reports about both: the flooded address's from its sums, as the formula says.
  store.sqlite.query("INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, 1, 'SSH', 2, '', 'pending', 'api', ?, ?)").run(IP.text, T0 + 1, T0 + 1);
  expect(store.sqlite.query("SELECT sum(reports) AS n FROM reporter_score_sums WHERE ip = ?").get(IP.text)).toEqual({ n: 451 });
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0 + 1, scorer);
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0 + 1, scorer, OTHER);
});
