// Community verification of a flooded group (one reporter's 998 imported reports, then two more reporters): its
// pending reports verified a chunk per transaction with turns of the event loop between, each with its
// transition, credit and one ip.verified; a report rejected between chunks stays rejected, and a run after one cut
// short between chunks (the cursor is stored with the last chunk only) verifies the rest, each report once; a live
// report stored between chunks is never ahead of the time the later chunks score the address at.

import { afterEach, beforeEach, expect, test } from "bun:test";
import { parseIp } from "../../../../src/domain/ip";
import { DAY_MS, DEFAULT_SCORING_PARAMETERS } from "../../../../src/domain/scoring";
import { createAddressScorer } from "../../../../src/services/reports/scorer";
import { turnsTaken } from "../../../support/event-loop-watch";
import { createReportFixture, indexed, outboxData, type ReportFixture, reportInput, rows } from "./reports-fixture";

let f: ReportFixture;
beforeEach(() => {
  f = createReportFixture();
});
afterEach(() => f.close());

const IP = "203.0.113.7";
const FLOOD = 998;
const HOUR = 3_600_000;

/** a's FLOOD imported reports a minute apart from two days ago, then b's and c's live ones an hour ago; their ids. */
function flood(a: number, b: number, c: number): number[] {
  const insert = f.store.sqlite.query(
    `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
     VALUES (?, 4, ?, 'SSH', 3, '', 'pending', ?, ?, ?)`,
  );
  const now = f.clock.now();
  const ids: number[] = [];
  const add = (reporter: number, source: string, at: number) => ids.push(Number(insert.run(IP, reporter, source, at, at).lastInsertRowid));
  f.store.sqlite.transaction(() => {
    for (let i = 0; i < FLOOD; i++) add(a, "import", now - 2 * DAY_MS + i * 60_000);
    add(b, "api", now - HOUR);
    add(c, "api", now - HOUR + 1);
  })();
  return ids;
}

const count = (sql: string) => rows<{ n: number }>(f.store, sql)[0]!.n;
const cursor = () => rows<{ value: string }>(f.store, "SELECT value FROM meta WHERE key = 'community_verification_cursor'");

test("1,000 pending reports: verified in several transactions with turns between, each with its transition, credit and one event", async () => {
  const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
  const ids = flood(a, b, c);
  f.clock.advance(60_000);
  const at = f.clock.now();
  const { value, turns } = await turnsTaken(() => f.states.verifyCommunityInTurns(at));
  expect(value).toEqual({ groups: 1, verified: 1_000 });
  // The group's read, then chunks of at most 300 (1,000 in one transaction held requests for ~50 ms).
  expect(turns).toBeGreaterThanOrEqual(3);
  expect(count("SELECT count(*) AS n FROM reports WHERE status = 'verified'")).toBe(1_000);
  expect(count("SELECT count(*) AS n FROM report_transitions WHERE to_status = 'verified'")).toBe(1_000);
  expect(outboxData(f.store, "ip.verified").map((e) => Number(e.reportId))).toEqual(ids);
  // Imports earn no credits; b and c +2 each.
  expect(rows(f.store, "SELECT user_id, delta, report_id FROM credit_ledger WHERE reason = 'report_verified' ORDER BY id")).toEqual([
    { user_id: b, delta: 2, report_id: ids[FLOOD] },
    { user_id: c, delta: 2, report_id: ids[FLOOD + 1] },
  ]);
  expect(indexed(f.index, IP)).toMatchObject({ totalReports: 1_000, verifiedReports: 1_000 });
  expect(JSON.parse(cursor()[0]!.value)).toMatchObject({ id: ids.at(-1), at });
  // Nothing again on the next run.
  f.clock.advance(60_000);
  expect(await f.states.verifyCommunityInTurns(f.clock.now())).toEqual({ groups: 0, verified: 0 });
  expect(outboxData(f.store, "ip.verified")).toHaveLength(1_000);
});

test("between chunks: a report rejected stays rejected, and a run after one cut short verifies the rest once", async () => {
  const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
  // A first run stores a cursor; the flood comes after it.
  expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
  const before = cursor();
  expect(before).toHaveLength(1);
  f.clock.advance(60_000);
  const ids = flood(a, b, c);
  f.clock.advance(60_000);
  const at = f.clock.now();
  const rejected = ids[FLOOD - 1]!;

  // Between two chunks of the run (some verified, not all): the cursor is still the one before it, as a crash
  // would leave it. An admin rejects a pending report, and the next run (what follows a crash) starts from there.
  let between: { cursor: unknown; nextRun: unknown } | null = null;
  let running = true;
  const watch = () => {
    if (!running || between !== null) return;
    const verified = count("SELECT count(*) AS n FROM reports WHERE status = 'verified'");
    if (verified > 0 && verified < 1_000) {
      const seen = cursor();
      f.states.setStatus(rejected, "rejected", a, at);
      between = { cursor: seen, nextRun: f.states.verifyCommunity(at) };
    } else setImmediate(watch);
  };
  setImmediate(watch);
  const first = await f.states.verifyCommunityInTurns(at);
  running = false;

  expect(between).not.toBeNull();
  expect(between!.cursor).toEqual(before);
  const cut = first.verified;
  expect(cut).toBeGreaterThan(0);
  expect(cut).toBeLessThan(1_000);
  expect(between!.nextRun).toEqual({ groups: 1, verified: 1_000 - cut - 1 });
  // The run carried on, and its later chunks found nothing still pending.
  expect(first.groups).toBe(1);
  expect(rows(f.store, "SELECT status FROM reports WHERE id = ?", rejected)).toEqual([{ status: "rejected" }]);
  expect(count("SELECT count(*) AS n FROM reports WHERE status = 'verified'")).toBe(999);
  expect(count("SELECT count(*) AS n FROM report_transitions WHERE to_status = 'verified'")).toBe(999);
  expect(outboxData(f.store, "ip.verified").map((e) => Number(e.reportId)).sort((x, y) => x - y)).toEqual(ids.filter((id) => id !== rejected));
  expect(rows(f.store, "SELECT user_id FROM credit_ledger WHERE reason = 'report_verified' ORDER BY id")).toEqual([{ user_id: b }, { user_id: c }]);
  expect(indexed(f.index, IP)).toMatchObject({ totalReports: 999, verifiedReports: 999 });
});

test("a group of 20,000 counting reports is read a page a turn, and its two pending reports verified", async () => {
  const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
  const insert = f.store.sqlite.query(
    `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
     VALUES (?, 4, ?, 'SSH', 3, '', ?, ?, ?, ?)`,
  );
  const now = f.clock.now();
  f.store.sqlite.transaction(() => {
    for (let i = 0; i < 20_000; i++) insert.run(IP, a, "verified", "import", now - 10 * DAY_MS + i * 30_000, now);
    insert.run(IP, b, "pending", "api", now - HOUR, now - HOUR);
    insert.run(IP, c, "pending", "api", now - HOUR, now - HOUR);
  })();
  f.clock.advance(60_000);
  const { value, turns } = await turnsTaken(() => f.states.verifyCommunityInTurns(f.clock.now()));
  expect(value).toEqual({ groups: 1, verified: 2 });
  // 20,002 reports in 14 days: five pages of at most 4,096, a turn between two, then the chunk.
  expect(turns).toBeGreaterThanOrEqual(3);
  expect(rows(f.store, "SELECT reporter_id FROM reports WHERE status = 'pending'")).toEqual([]);
  expect(outboxData(f.store, "ip.verified").map((e) => Number(e.reportId))).toEqual([20_001, 20_002]);
});

test("a live report stored between two chunks: the later chunks score the address at the clock's time, never before that report", async () => {
  const [a, b, c, d] = [f.addUser(), f.addUser(), f.addUser(), f.addUser()];
  const ids = flood(a, b, c);
  f.clock.advance(60_000);
  const at = f.clock.now();
  let liveAt: number | null = null;
  let running = true;
  const watch = () => {
    if (!running || liveAt !== null) return;
    const verified = count("SELECT count(*) AS n FROM reports WHERE status = 'verified'");
    if (verified > 0 && verified < 1_000) {
      f.clock.advance(60_000);
      liveAt = f.clock.now();
      void f.reports.submit(d, reportInput(IP));
      f.reports.flush();
    } else setImmediate(watch);
  };
  setImmediate(watch);
  const run = await f.states.verifyCommunityInTurns(at);
  running = false;

  expect(liveAt).not.toBeNull();
  // The run itself is what it was: its reports (d's is the next run's), each transition and event dated `at`.
  expect(run).toEqual({ groups: 1, verified: 1_000 });
  expect(rows(f.store, "SELECT DISTINCT at FROM report_transitions WHERE to_status = 'verified'")).toEqual([{ at }]);
  expect(outboxData(f.store, "ip.verified").map((e) => Number(e.reportId))).toEqual(ids);
  // At `at` the address would be scored before d's report, which only its reports can answer (every one of them
  // read again, seconds for a flooded address); intake had already scored it at d's time, and a score at `at`
  // would have gone back in time.
  const stored = rows<{ scoredAt: number; score: number; total: number; verified: number }>(
    f.store,
    "SELECT scored_at AS scoredAt, reputation_score AS score, total_reports AS total, verified_reports AS verified FROM addresses WHERE ip = ?",
    IP,
  )[0]!;
  expect(stored.scoredAt).toBe(liveAt!);
  const evaluated = createAddressScorer(f.store, DEFAULT_SCORING_PARAMETERS, { persist: false }).evaluate(parseIp(IP), liveAt!).record!;
  expect(stored).toEqual({ scoredAt: liveAt!, score: evaluated.reputationScore, total: 1_001, verified: 1_000 });
  expect(indexed(f.index, IP)).toEqual(evaluated);
});
