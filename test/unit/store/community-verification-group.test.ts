// The community-verification group read in SQL (store/report-states.ts's groupReports, window functions over
// the (ip, created_at) index) keeps exactly the rows domain/community-verification.ts's
// reportsDecidingVerification keeps of the group's counting reports in the range: random histories written to a
// real SQLite file, with other categories, rejected and expired reports and reports outside the range beside them.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { reportsDecidingVerification } from "../../../src/domain/community-verification";
import { openStore, type Store } from "../../../src/store/database";
import { type GroupReportRow, reportStateStatements } from "../../../src/store/report-states";

let dir: string;
let store: Store;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-verify-group-"));
  store = openStore(dir);
  for (let i = 1; i <= 4; i++) {
    store.sqlite
      .query("INSERT INTO users (id, email, password_hash, tier, role, disabled, created_at, updated_at) VALUES (?, ?, 'x', 'free', 'user', 0, 0, 0)")
      .run(i, `group${i}@example.test`);
  }
});
afterAll(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const row = fc.record({
  // Reporter 1 most of the time: long runs, as a flood makes them.
  reporterId: fc.constantFrom(1, 1, 1, 1, 1, 2, 3, 4),
  status: fc.constantFrom("pending", "verified", "verified", "pending", "rejected", "expired"),
  category: fc.constantFrom("SSH", "SSH", "SSH", "WEB_SPAM"),
  createdAt: fc.integer({ min: 0, max: 30 }),
  source: fc.constantFrom("api", "import"),
});

let groups = 0;

test("the SQL keeps exactly the rows the pure reduction keeps", () => {
  const insert = store.sqlite.query(
    `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
     VALUES (?, 4, ?, ?, 3, '', ?, ?, ?, ?)`,
  );
  const all = store.sqlite.query(
    `SELECT id, reporter_id AS reporterId, status, created_at AS createdAt, source FROM reports
      WHERE ip = ? AND category = 'SSH' AND status IN ('pending', 'verified') AND created_at >= ? AND created_at <= ?
      ORDER BY created_at, id`,
  );
  const { groupReports } = reportStateStatements(store.sqlite);
  let kept = 0;
  fc.assert(
    fc.property(fc.array(row, { maxLength: 40 }), fc.integer({ min: 0, max: 8 }), fc.integer({ min: 18, max: 32 }), fc.integer({ min: 0, max: 32 }), fc.integer({ min: 0, max: 10 }), (rows, from, to, since, window) => {
      // Ids in the order of insertion, dates at random: (created_at, id) is not the order of either alone.
      const ip = `10.${(++groups >> 8) & 255}.${groups & 255}.1`;
      store.sqlite.transaction(() => {
        for (const r of rows) insert.run(ip, r.reporterId, r.category, r.status, r.source, r.createdAt, r.createdAt);
      })();
      const expected = reportsDecidingVerification(all.all(ip, from, to) as GroupReportRow[], since, window);
      const got = groupReports.all(ip, "SSH", from, to, since, window);
      kept += got.length;
      expect(got).toEqual(expected);
    }),
    { numRuns: 1_000 },
  );
  expect(kept).toBeGreaterThan(400);
}, 120_000);

test("a group flooded by one reporter reaches JavaScript as its run's ends and the rows that matter", () => {
  const insert = store.sqlite.query(
    `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
     VALUES ('192.0.2.1', 4, ?, 'SSH', 3, '', ?, 'import', ?, ?)`,
  );
  store.sqlite.transaction(() => {
    for (let i = 0; i < 5_000; i++) insert.run(1, "verified", i, i);
    insert.run(2, "pending", 5_000, 5_000);
    insert.run(3, "pending", 5_001, 5_001);
  })();
  const got = reportStateStatements(store.sqlite).groupReports.all("192.0.2.1", "SSH", 1_000, 10_000, 2_500, 600);
  expect(got.map((r) => [r.reporterId, r.status, r.createdAt])).toEqual([
    [1, "verified", 1_000],
    [1, "verified", 2_500],
    [1, "verified", 4_999],
    [2, "pending", 5_000],
    [3, "pending", 5_001],
  ]);
});

test("a pending report exactly the window from another reporter's report is kept, one a unit further is not", () => {
  const insert = store.sqlite.query(
    `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
     VALUES ('192.0.2.2', 4, ?, 'SSH', 3, '', 'pending', 'api', ?, ?)`,
  );
  store.sqlite.transaction(() => {
    insert.run(2, 0, 0);
    for (let t = 1; t <= 19; t++) insert.run(1, t, t);
    insert.run(3, 20, 20);
  })();
  // Window 2: reporter 1's run keeps its ends (1, 19) and the pending reports 2 from reporter 2's (2) and 3's (18).
  const got = reportStateStatements(store.sqlite).groupReports.all("192.0.2.2", "SSH", 0, 100, 100, 2);
  expect(got.map((r) => r.createdAt)).toEqual([0, 1, 2, 18, 19, 20]);
});
