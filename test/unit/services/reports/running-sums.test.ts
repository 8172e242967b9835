// The scorer's running sums (migration 0006, score-sums.ts, running-sums.ts) against contract 5.7 computed from
// scratch: random report histories on one address (many reporters and one flooding reporter; verifications,
// rejections, the expire job, clear-address, reports dated long ago, time moving on and back), and after each
// step the record the scorer writes equals scoreReports over every report in the table at that time.
//
// Tolerance: Σw from the sums differs from the formula's by rounding only, at most 1e-9 × (1 + Σ|term|); the
// integer score and the risk level are therefore equal except where the formula's 100·exp(−Σw/scale) lies within
// 1e-6 of a .5 (the property skips those rare draws; none came up in the runs made); the rescore due time is
// the same millisecond or the next. Counts, categories and first/last seen are exact.

import { afterEach, beforeEach, expect, test } from "bun:test";
import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CATEGORIES, categoryBit, type Category } from "../../../../src/domain/categories";
import { parseIp } from "../../../../src/domain/ip";
import { DAY_MS, DEFAULT_SCORING_PARAMETERS, nextRescoreDueMs, resolveScoringParameters, retentionCutoffMs, scoreReports, type ReportStatus, type ScoredReport, type ScoringParameters, type Severity } from "../../../../src/domain/scoring";
import { createAddressScorer } from "../../../../src/services/reports/scorer";
import { AddressReports } from "../../../../src/store/address-reports";
import { openStore, type Store, inTransaction } from "../../../../src/store/database";

const IP = parseIp("198.51.100.7");
const T0 = Date.parse("2026-06-01T00:00:00Z");
let dir: string;
let store: Store;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-running-sums-"));
  store = openStore(dir);
  for (let id = 1; id <= 8; id++) store.sqlite.query("INSERT INTO users (id, email, password_hash, created_at, updated_at) VALUES (?, ?, 'x', 0, 0)").run(id, `u${id}@example.com`);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

type Step =
  | { kind: "report"; reporter: number; severity: Severity; daysAgo: number; category: number; many: number }
  | { kind: "verify" | "reject"; pick: number }
  | { kind: "expire" }
  | { kind: "clear"; reporter: number | null }
  | { kind: "later"; days: number }
  | { kind: "earlier"; days: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("report" as const), reporter: fc.integer({ min: 1, max: 8 }), severity: fc.integer({ min: 1, max: 5 }) as fc.Arbitrary<Severity>, daysAgo: fc.double({ min: 0, max: 400, noNaN: true }), category: fc.integer({ min: 0, max: 5 }), many: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 40 })) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom("verify" as const, "reject" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("expire" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("clear" as const), reporter: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("later" as const), days: fc.double({ min: 0, max: 200, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("earlier" as const), days: fc.double({ min: 0, max: 30, noNaN: true }) }) },
);

function allReports(): ScoredReport[] {
  const rows = store.sqlite
    .query("SELECT id, reporter_id AS reporterId, severity, created_at AS createdAtMs, status, category FROM reports WHERE ip = ?")
    .all(IP.text) as { id: number; reporterId: number; severity: Severity; createdAtMs: number; status: ReportStatus; category: Category }[];
  return rows;
}

const nearHalf = (sumWeight: number, params: ScoringParameters) => Math.abs(((100 * Math.exp(-sumWeight / params.scale)) % 1) - 0.5) < 1e-6;

/** The scorer's record and due time equal the formula's at `nowMs` (see the tolerance in the header). */
function expectFormula(params: ScoringParameters, nowMs: number, scorer = createAddressScorer(store, params)): void {
  const reports = allReports();
  const expected = scoreReports(reports, nowMs, params);
  const { rescoreDueMs } = scorer.evaluate(IP, nowMs);
  const record = inTransaction(store, () => scorer.rescore(IP, nowMs));
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

function run(steps: Step[], params: ScoringParameters): void {
  // Each history starts afresh, floors included (a floor from a later time would send every score to the formula).
  store.sqlite.exec("DELETE FROM report_transitions; DELETE FROM reports; DELETE FROM addresses; DELETE FROM reporter_score_sums; DELETE FROM address_category_counts");
  const deletions = new AddressReports(store);
  const insert = store.sqlite.query(
    "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, ?, ?, ?, '', 'pending', 'api', ?, ?)",
  );
  const scorer = createAddressScorer(store, params);
  let now = T0;
  for (const s of steps) {
    let at = now;
    switch (s.kind) {
      case "report":
        for (let i = 0; i < s.many; i++) {
          const created = Math.floor(now - s.daysAgo * DAY_MS) - i * 60_000;
          insert.run(IP.text, s.reporter, CATEGORIES[s.category]!, s.severity, created, now);
        }
        break;
      case "verify":
      case "reject": {
        const ids = store.sqlite.query("SELECT id FROM reports WHERE ip = ? AND status = 'pending' ORDER BY id").all(IP.text) as { id: number }[];
        if (ids.length > 0) store.sqlite.query("UPDATE reports SET status = ?, status_changed_at = ? WHERE id = ?").run(s.kind === "verify" ? "verified" : "rejected", now, ids[s.pick % ids.length]!.id);
        break;
      }
      case "expire":
        store.sqlite.query("UPDATE reports SET status = 'expired' WHERE status IN ('pending', 'verified') AND created_at < ?").run(retentionCutoffMs(now, params));
        break;
      case "clear":
        inTransaction(store, () => deletions.deleteOf(IP.text, s.reporter, now));
        break;
      case "later":
        now += Math.floor(s.days * DAY_MS);
        at = now;
        break;
      case "earlier":
        at = now - Math.floor(s.days * DAY_MS);
        break;
    }
    expectFormula(params, at, scorer);
  }
}

test("scores from the running sums equal the formula's on random report histories (default parameters)", () => {
  fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => run(steps, DEFAULT_SCORING_PARAMETERS)), { numRuns: 80 });
}, 240_000);

test("with other scoring parameters the server's scorer sums the reports again in its units, and the scores still match", () => {
  const params = resolveScoringParameters({ halfLifeDays: 7, severityWeights: { 5: 1.3 }, verifiedMultiplier: 3, retentionDays: 90 });
  // A scorer that may rebuild does (as the server's does at start); the tables then hold sums in its units.
  createAddressScorer(store, params, { rebuildSumsAtMs: T0 });
  const units = store.sqlite.query("SELECT half_life_ms AS h, weight_5 AS w5, verified_multiplier AS m FROM score_sum_params").get();
  expect(units).toEqual({ h: 7 * DAY_MS, w5: 1.3, m: 3 });
  fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 20 }), (steps) => run(steps, params)), { numRuns: 40 });
}, 240_000);

test("a flood from one reporter: each batch reads its reporter's sum, not its reports, and the score follows the formula", () => {
  const insert = store.sqlite.query(
    "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES (?, 4, 1, 'SSH', 3, '', 'pending', 'api', ?, ?)",
  );
  inTransaction(store, () => {
    for (let i = 0; i < 5_000; i++) insert.run(IP.text, T0 - i * 1_000, T0);
  });
  expect(store.sqlite.query("SELECT reports FROM reporter_score_sums WHERE ip = ?").get(IP.text)).toEqual({ reports: 5_000 });
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0);
  expectFormula(DEFAULT_SCORING_PARAMETERS, T0 + 10 * DAY_MS);
}, 120_000);
