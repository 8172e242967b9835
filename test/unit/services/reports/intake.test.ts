// Report ingest: what one report writes, the 15-minute duplicate rule, and the group commit (one transaction per
// batch, each promise settled after the commit and rejected only for its own error).

import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { AppError } from "../../../../src/domain/errors";
import { databasePath } from "../../../../src/store/database";
import { watchEventLoop } from "../../../support/event-loop-watch";
import { createReportFixture, indexed, outboxData, type ReportFixture, reportInput, rows } from "./reports-fixture";

let f: ReportFixture;
beforeEach(() => {
  f = createReportFixture();
});
afterEach(() => f.close());

const T0 = Date.parse("2026-11-21T08:00:00.000Z");
const MINUTE = 60_000;

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected the report to be refused");
}

describe("one report", () => {
  test("writes the report, its transition, the credit, the address, the outbox row; then the index", async () => {
    const alice = f.addUser();
    const accepted = await f.reports.submit(alice, { ...reportInput("203.0.113.7", "BRUTE_FORCE", 3, "ssh guessing"), evidence: "log line" });
    expect(accepted).toEqual({
      reportId: "1",
      ipAddress: "203.0.113.7",
      category: "BRUTE_FORCE",
      severity: 3,
      status: "pending",
      createdAt: "2026-11-21T08:00:00.000Z",
      creditsEarned: 1,
      creditBalance: 1,
    });
    expect(rows(f.store, "SELECT id, ip, ip_version, reporter_id, category, severity, description, evidence, status, source, created_at, status_changed_at FROM reports")).toEqual([
      {
        id: 1,
        ip: "203.0.113.7",
        ip_version: 4,
        reporter_id: alice,
        category: "BRUTE_FORCE",
        severity: 3,
        description: "ssh guessing",
        evidence: "log line",
        status: "pending",
        source: "api",
        created_at: T0,
        status_changed_at: T0,
      },
    ]);
    expect(rows(f.store, "SELECT report_id, from_status, to_status, at, actor_user_id, reason FROM report_transitions")).toEqual([
      { report_id: 1, from_status: null, to_status: "pending", at: T0, actor_user_id: alice, reason: "api" },
    ]);
    expect(rows(f.store, "SELECT user_id, delta, reason, report_id, created_at FROM credit_ledger")).toEqual([
      { user_id: alice, delta: 1, reason: "report_accepted", report_id: 1, created_at: T0 },
    ]);
    expect(f.credits.balance(alice)).toEqual({ balance: 1, lifetimeEarned: 1, reportsAccepted: 1, reportsVerified: 0, updatedAt: "2026-11-21T08:00:00.000Z" });
    // severity 3, fresh: w = 0.6, score = round(100 × e^(−0.4)) = 67
    expect(rows(f.store, "SELECT ip, reputation_score, total_reports, verified_reports, last_category, first_seen, last_seen FROM addresses")).toEqual([
      { ip: "203.0.113.7", reputation_score: 67, total_reports: 1, verified_reports: 0, last_category: "BRUTE_FORCE", first_seen: T0, last_seen: T0 },
    ]);
    expect(outboxData(f.store, "ip.reported")).toEqual([{ ip: "203.0.113.7", category: "brute_force", confidence: 33, reporter_id: String(alice), reportId: "1" }]);
    expect(indexed(f.index, "203.0.113.7")).toEqual({
      reputationScore: 67,
      totalReports: 1,
      verifiedReports: 0,
      categoriesMask: 1 << 1,
      lastCategoryBit: 1,
      firstSeenMs: T0,
      lastSeenMs: T0,
    });
    expect(f.announced).toEqual(["203.0.113.7"]);
    expect(f.nudges.count).toBe(1);
  });

  test("the event's confidence is the address's abuse_confidence with the report included", async () => {
    const [a, b] = [f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("198.51.100.1", "SSH", 3));
    await f.reports.submit(b, reportInput("198.51.100.1", "DDOS", 5));
    // Σw = 0.6 + 1.0 = 1.6: score round(100 × e^(−1.6/1.5)) = 34, confidence 66
    expect(outboxData(f.store, "ip.reported").map((d) => [d.category, d.confidence, d.reporter_id])).toEqual([
      ["ssh", 33, String(a)],
      ["ddos", 66, String(b)],
    ]);
    expect(indexed(f.index, "198.51.100.1")?.reputationScore).toBe(34);
  });

  test("an IPv6 report is stored in normalized form", async () => {
    const a = f.addUser();
    const accepted = await f.reports.submit(a, reportInput("2001:db8::1"));
    expect(accepted.ipAddress).toBe("2001:db8::1");
    expect(rows(f.store, "SELECT ip, ip_version FROM reports")).toEqual([{ ip: "2001:db8::1", ip_version: 6 }]);
    expect(indexed(f.index, "2001:db8::1")?.totalReports).toBe(1);
  });

  test("the balance counts up with each report", async () => {
    const a = f.addUser();
    for (let i = 1; i <= 3; i++) expect((await f.reports.submit(a, reportInput(`192.0.2.${i}`))).creditBalance).toBe(i);
    expect(f.credits.balance(a)).toMatchObject({ balance: 3, lifetimeEarned: 3, reportsAccepted: 3 });
  });

  test("the row is in the database file when the promise resolves (a second connection sees it)", async () => {
    const a = f.addUser();
    const accepted = await f.reports.submit(a, reportInput("203.0.113.50"));
    const other = new Database(databasePath(f.dir), { readonly: true });
    try {
      expect(other.query("SELECT id, ip, status FROM reports WHERE id = ?").get(Number(accepted.reportId))).toEqual({ id: 1, ip: "203.0.113.50", status: "pending" });
      expect(other.query("SELECT count(*) AS n FROM outbox").get()).toEqual({ n: 1 });
    } finally {
      other.close();
    }
  });
});

describe("the 15-minute duplicate rule", () => {
  const table: { after: number; retryAfter: string | null }[] = [
    { after: 0, retryAfter: "900" },
    { after: 1, retryAfter: "900" }, // 899.999 s left: whole seconds round up
    { after: 1000, retryAfter: "899" },
    { after: 10 * MINUTE, retryAfter: "300" },
    { after: 15 * MINUTE - 1, retryAfter: "1" },
    { after: 15 * MINUTE, retryAfter: null },
    { after: 60 * MINUTE, retryAfter: null },
  ];
  for (const { after, retryAfter } of table) {
    test(`${after} ms after the first report: ${retryAfter === null ? "accepted" : `refused, Retry-After ${retryAfter}`}`, async () => {
      const a = f.addUser();
      await f.reports.submit(a, reportInput("203.0.113.9"));
      f.clock.advance(after);
      const again = f.reports.submit(a, reportInput("203.0.113.9", "PORT_SCAN"));
      if (retryAfter === null) {
        expect((await again).reportId).toBe("2");
        return;
      }
      const error = await refusal(again);
      expect(error.errorCode).toBe("duplicate_report");
      expect(error.status).toBe(429);
      expect(error.headers).toEqual({ "retry-after": retryAfter });
      // Nothing stored, no credit, no event.
      expect(rows(f.store, "SELECT count(*) AS n FROM reports")).toEqual([{ n: 1 }]);
      expect(rows(f.store, "SELECT count(*) AS n FROM report_transitions")).toEqual([{ n: 1 }]);
      expect(rows(f.store, "SELECT count(*) AS n FROM outbox")).toEqual([{ n: 1 }]);
      expect(f.credits.balance(a)).toMatchObject({ balance: 1, reportsAccepted: 1 });
    });
  }

  test("another reporter, or another address, is not a duplicate", async () => {
    const [a, b] = [f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.9"));
    expect((await f.reports.submit(b, reportInput("203.0.113.9"))).reportId).toBe("2");
    expect((await f.reports.submit(a, reportInput("203.0.113.10"))).reportId).toBe("3");
  });

  test("the same address in another form is the same address", async () => {
    const a = f.addUser();
    await f.reports.submit(a, reportInput("2001:db8:0:0:0:0:0:1"));
    expect((await refusal(f.reports.submit(a, reportInput("2001:DB8::1")))).errorCode).toBe("duplicate_report");
  });
});

describe("group commit", () => {
  test("100 reports at once are committed in one transaction, every one of them", async () => {
    const reporters = Array.from({ length: 4 }, () => f.addUser());
    const before = { ...f.reports.stats };
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => f.reports.submit(reporters[i % 4], reportInput(`10.0.${Math.floor(i / 250)}.${i + 1}`))),
    );
    expect(f.reports.stats.batches - before.batches).toBe(1);
    expect(f.reports.stats.largestBatch).toBe(100);
    expect(new Set(results.map((r) => r.reportId)).size).toBe(100);
    expect(rows(f.store, "SELECT count(*) AS n, count(DISTINCT ip) AS ips FROM reports")).toEqual([{ n: 100, ips: 100 }]);
    expect(rows(f.store, "SELECT count(*) AS n FROM addresses")).toEqual([{ n: 100 }]);
    expect(rows(f.store, "SELECT count(*) AS n FROM outbox WHERE event = 'ip.reported'")).toEqual([{ n: 100 }]);
    expect(f.index.size).toBe(100);
    // Each reporter's balance counts its own 25, and the responses carry the running balance.
    for (const r of reporters) expect(f.credits.balance(r).balance).toBe(25);
    expect(results.filter((r) => r.creditBalance === 25).length).toBe(4);
    // One nudge for the batch, not one per report.
    expect(f.nudges.count).toBe(1);
  });

  test("a full batch is written at once; the rest waits for the next macrotask", async () => {
    f.close();
    f = createReportFixture({ maxBatch: 10 });
    const a = f.addUser();
    const pending = Array.from({ length: 25 }, (_, i) => f.reports.submit(a, reportInput(`10.1.0.${i + 1}`)));
    // Two full batches were committed synchronously inside submit().
    expect(f.reports.stats).toEqual({ batches: 2, reports: 20, largestBatch: 10 });
    expect(rows(f.store, "SELECT count(*) AS n FROM reports")).toEqual([{ n: 20 }]);
    await Promise.all(pending);
    expect(f.reports.stats).toEqual({ batches: 3, reports: 25, largestBatch: 10 });
  });

  test("nothing is written before the flush: the promise settles only after the commit", async () => {
    const a = f.addUser();
    let settled = false;
    const p = f.reports.submit(a, reportInput("192.0.2.77")).then(() => (settled = true));
    expect(rows(f.store, "SELECT count(*) AS n FROM reports")).toEqual([{ n: 0 }]);
    await Promise.resolve();
    expect(settled).toBe(false);
    await p;
    expect(rows(f.store, "SELECT count(*) AS n FROM reports")).toEqual([{ n: 1 }]);
  });

  test("a duplicate inside one batch is refused alone; the rest of the batch commits", async () => {
    const [a, b] = [f.addUser(), f.addUser()];
    const results = await Promise.allSettled([
      f.reports.submit(a, reportInput("203.0.113.20")),
      f.reports.submit(b, reportInput("203.0.113.20")),
      f.reports.submit(a, reportInput("203.0.113.20", "DDOS")),
      f.reports.submit(a, reportInput("203.0.113.21")),
    ]);
    expect(f.reports.stats.batches).toBe(1);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    const error = (results[2] as PromiseRejectedResult).reason as AppError;
    expect(error.errorCode).toBe("duplicate_report");
    expect(error.headers).toEqual({ "retry-after": "900" });
    expect(rows(f.store, "SELECT reporter_id, ip, category FROM reports ORDER BY id")).toEqual([
      { reporter_id: a, ip: "203.0.113.20", category: "SSH" },
      { reporter_id: b, ip: "203.0.113.20", category: "SSH" },
      { reporter_id: a, ip: "203.0.113.21", category: "SSH" },
    ]);
    expect(f.credits.balance(a).balance).toBe(2);
  });

  test("a report that fails in the middle of its writes is rolled back alone", async () => {
    const a = f.addUser();
    const results = await Promise.allSettled([
      f.reports.submit(a, reportInput("203.0.113.30")),
      // No such user: the report's insert breaks its foreign key after the duplicate check passed.
      f.reports.submit(9999, reportInput("203.0.113.31")),
      f.reports.submit(a, reportInput("203.0.113.32")),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(rows(f.store, "SELECT ip FROM reports ORDER BY id")).toEqual([{ ip: "203.0.113.30" }, { ip: "203.0.113.32" }]);
    expect(rows(f.store, "SELECT count(*) AS n FROM credit_ledger WHERE user_id = 9999")).toEqual([{ n: 0 }]);
    expect(rows(f.store, "SELECT count(*) AS n FROM outbox")).toEqual([{ n: 2 }]);
    expect(indexed(f.index, "203.0.113.31")).toBeNull();
    expect(f.announced.sort()).toEqual(["203.0.113.30", "203.0.113.32"]);
  });

  test("several reports on one address in a batch: the index ends with the last record", async () => {
    const users = [f.addUser(), f.addUser(), f.addUser()];
    await Promise.all(users.map((u) => f.reports.submit(u, reportInput("203.0.113.40"))));
    expect(f.reports.stats.batches).toBe(1);
    // Σw = 3 × 0.6 = 1.8: round(100 × e^(−1.2)) = 30
    expect(indexed(f.index, "203.0.113.40")).toMatchObject({ reputationScore: 30, totalReports: 3 });
    // The address is rescored once per batch; the reports commit together, so each event carries the
    // confidence after the batch.
    expect(outboxData(f.store, "ip.reported").map((d) => d.confidence)).toEqual([70, 70, 70]);
    expect(f.announced).toEqual(["203.0.113.40"]);
  });

  test("flush() with nothing queued does nothing", () => {
    f.reports.flush();
    expect(f.reports.stats).toEqual({ batches: 0, reports: 0, largestBatch: 0 });
  });
});

describe("another process holding the write lock", () => {
  test("reports wait without blocking the event loop, whatever the busy timeout, and commit once the lock is released", async () => {
    // A busy timeout far longer than the wait: a batch that waited for the lock would hold the loop that long
    // (30 s), two orders of magnitude above the bound below, which a loaded machine's pauses stay far under.
    const g = createReportFixture({ busyTimeoutMs: 30_000 });
    const other = new Database(databasePath(g.dir));
    try {
      const user = g.addUser();
      other.exec("BEGIN IMMEDIATE");
      let settled = false;
      const pending = g.reports.submit(user, reportInput("203.0.113.90")).finally(() => (settled = true));
      // The event loop keeps turning while the batch is tried again and again: timers fire on time.
      const watch = watchEventLoop();
      await Bun.sleep(400);
      expect(watch.stop()).toBeLessThan(10_000);
      expect(settled).toBe(false);
      other.exec("COMMIT");
      const accepted = await pending;
      expect(accepted.ipAddress).toBe("203.0.113.90");
      expect(other.query("SELECT count(*) AS n FROM reports WHERE ip = '203.0.113.90'").get()).toEqual({ n: 1 });
    } finally {
      if (other.inTransaction) other.exec("ROLLBACK");
      other.close();
      g.close();
    }
  });

  test("after the give-up time they fail with 503 busy and nothing is stored", async () => {
    const g = createReportFixture({ busyTimeoutMs: 10, busyGiveUpMs: 100 });
    const other = new Database(databasePath(g.dir));
    try {
      const user = g.addUser();
      other.exec("BEGIN IMMEDIATE");
      const error = await g.reports.submit(user, reportInput("203.0.113.91")).catch((e) => e);
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ errorCode: "busy", status: 503, headers: { "retry-after": "1" } });
      other.exec("ROLLBACK");
      expect(other.query("SELECT count(*) AS n FROM reports").get()).toEqual({ n: 0 });
    } finally {
      if (other.inTransaction) other.exec("ROLLBACK");
      other.close();
      g.close();
    }
  });
  test("a retry fails only the reports past the give-up time; the later ones wait on, in their order, and commit", async () => {
    const g = createReportFixture({ busyTimeoutMs: 0, busyGiveUpMs: 150 });
    const other = new Database(databasePath(g.dir));
    try {
      const user = g.addUser();
      other.exec("BEGIN IMMEDIATE");
      const early = [g.reports.submit(user, reportInput("203.0.113.92")), g.reports.submit(user, reportInput("203.0.113.93"))];
      const earlyErrors = early.map((p) => p.catch((e) => e));
      // Queued while the early ones wait, so a retry after their give-up time finds both kinds.
      await Bun.sleep(100);
      const late = ["203.0.113.94", "203.0.113.95", "203.0.113.96"].map((ip) => g.reports.submit(user, reportInput(ip)));
      for (const error of await Promise.all(earlyErrors)) expect(error).toMatchObject({ errorCode: "busy", status: 503 });
      other.exec("ROLLBACK");
      const accepted = await Promise.all(late);
      expect(accepted.map((a) => a.ipAddress)).toEqual(["203.0.113.94", "203.0.113.95", "203.0.113.96"]);
      // Written in the order they were submitted.
      expect(accepted.map((a) => Number(a.reportId))).toEqual([1, 2, 3]);
      expect(other.query("SELECT count(*) AS n FROM reports").get()).toEqual({ n: 3 });
    } finally {
      if (other.inTransaction) other.exec("ROLLBACK");
      other.close();
      g.close();
    }
  });
});
