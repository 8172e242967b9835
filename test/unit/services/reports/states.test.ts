// Report states after submission: community verification (3 distinct reporters within 7 days), an admin's verify
// and reject with their credits, expiry past retention; every transition stored with its time, and a run's later
// chunks scored at the clock's time, never before a report stored during the run.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { AppError } from "../../../../src/domain/errors";
import { parseIp } from "../../../../src/domain/ip";
import { DAY_MS, DEFAULT_SCORING_PARAMETERS } from "../../../../src/domain/scoring";
import { createAddressScorer } from "../../../../src/services/reports/scorer";
import { createReportFixture, indexed, outboxData, type ReportFixture, reportInput, rows } from "./reports-fixture";

let f: ReportFixture;
beforeEach(() => {
  f = createReportFixture();
});
afterEach(() => f.close());

const T0 = Date.parse("2026-11-21T08:00:00.000Z");
const HOUR = 3_600_000;

const statuses = () => rows<{ id: number; status: string }>(f.store, "SELECT id, status FROM reports ORDER BY id").map((r) => r.status);

function thrown(fn: () => unknown): AppError {
  try {
    fn();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected an AppError");
}

describe("community verification", () => {
  test("3 distinct reporters at once: all verified, +2 credits each, one ip.verified per report, address rescored", async () => {
    const users = [f.addUser(), f.addUser(), f.addUser()];
    for (const u of users) await f.reports.submit(u, reportInput("203.0.113.7", "SSH"));
    f.clock.advance(60_000);
    const at = f.clock.now();
    expect(f.states.verifyCommunity(at)).toEqual({ groups: 1, verified: 3 });
    expect(statuses()).toEqual(["verified", "verified", "verified"]);
    expect(rows(f.store, "SELECT report_id, from_status, to_status, at, actor_user_id, reason FROM report_transitions WHERE to_status = 'verified' ORDER BY id")).toEqual(
      [1, 2, 3].map((id) => ({ report_id: id, from_status: "pending", to_status: "verified", at, actor_user_id: null, reason: "community: 3 or more distinct reporters within 7 days" })),
    );
    for (const u of users) {
      expect(f.credits.balance(u)).toEqual({ balance: 3, lifetimeEarned: 3, reportsAccepted: 1, reportsVerified: 1, updatedAt: new Date(at).toISOString() });
    }
    expect(rows(f.store, "SELECT user_id, delta, reason, report_id FROM credit_ledger WHERE reason = 'report_verified' ORDER BY id")).toEqual(
      users.map((u, i) => ({ user_id: u, delta: 2, reason: "report_verified", report_id: i + 1 })),
    );
    // Σw = 3 × 0.6 × 2 × 0.5^(1 min / 30 days) = 3.59992: round(100 × e^(−2.39995)) = 9, confidence 91
    expect(outboxData(f.store, "ip.verified")).toEqual(
      users.map((u, i) => ({ ip: "203.0.113.7", category: "ssh", confidence: 91, reporter_id: String(u), reportId: String(i + 1) })),
    );
    expect(indexed(f.index, "203.0.113.7")).toMatchObject({ reputationScore: 9, totalReports: 3, verifiedReports: 3 });
    expect(rows(f.store, "SELECT verified_reports, reputation_score FROM addresses")).toEqual([{ verified_reports: 3, reputation_score: 9 }]);
  });

  test("a second run finds nothing more to do", async () => {
    for (const u of [f.addUser(), f.addUser(), f.addUser()]) await f.reports.submit(u, reportInput("203.0.113.7"));
    f.states.verifyCommunity(f.clock.now());
    const nudges = f.nudges.count;
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
    expect(outboxData(f.store, "ip.verified").length).toBe(3);
    expect(f.nudges.count).toBe(nudges);
  });

  test("2 distinct reporters are not enough, however many reports they make", async () => {
    const [a, b] = [f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7"));
    await f.reports.submit(b, reportInput("203.0.113.7"));
    f.clock.advance(HOUR);
    await f.reports.submit(a, reportInput("203.0.113.7"));
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
    expect(statuses()).toEqual(["pending", "pending", "pending"]);
    expect(outboxData(f.store, "ip.verified")).toEqual([]);
  });

  test("3 reporters of different categories are not a group", async () => {
    const users = [f.addUser(), f.addUser(), f.addUser()];
    await f.reports.submit(users[0], reportInput("203.0.113.7", "SSH"));
    await f.reports.submit(users[1], reportInput("203.0.113.7", "SSH"));
    await f.reports.submit(users[2], reportInput("203.0.113.7", "BRUTE_FORCE"));
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
  });

  test("3 reporters spread over more than 7 days are not verified; within 7 days they are", async () => {
    const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7")); // T0
    f.clock.advance(4 * DAY_MS);
    await f.reports.submit(b, reportInput("203.0.113.7")); // T0 + 4 d
    f.clock.advance(3 * DAY_MS + 1);
    await f.reports.submit(c, reportInput("203.0.113.7")); // T0 + 7 d + 1 ms: a's report is out of the window
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
    expect(statuses()).toEqual(["pending", "pending", "pending"]);

    // A third reporter within 7 days of b and c: the window's pending reports are verified, a's is not.
    const d = f.addUser();
    await f.reports.submit(d, reportInput("203.0.113.7"));
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 1, verified: 3 });
    expect(statuses()).toEqual(["pending", "verified", "verified", "verified"]);
  });

  test("exactly 7 days apart is within 7 days", async () => {
    const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7"));
    f.clock.advance(7 * DAY_MS);
    await f.reports.submit(b, reportInput("203.0.113.7"));
    await f.reports.submit(c, reportInput("203.0.113.7"));
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 1, verified: 3 });
  });

  test("a reporter who joins a verified group later is verified on the next run", async () => {
    for (const u of [f.addUser(), f.addUser(), f.addUser()]) await f.reports.submit(u, reportInput("203.0.113.7"));
    f.states.verifyCommunity(f.clock.now());
    f.clock.advance(HOUR);
    const late = f.addUser();
    await f.reports.submit(late, reportInput("203.0.113.7"));
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 1, verified: 1 });
    expect(statuses()).toEqual(["verified", "verified", "verified", "verified"]);
    expect(f.credits.balance(late).balance).toBe(3);
  });

  // After its first full scan a run looks only at groups with a report new since the last one (eligibleGroups).
  describe("runs after the first: only groups with a new report, and none missed", () => {
    const insertImported = (reporter: number, ip: string, at: number) =>
      f.store.sqlite
        .query(
          `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
           VALUES (?, 4, ?, 'SSH', 3, '', 'pending', 'import', ?, ?)`,
        )
        .run(ip, reporter, at, at);

    test("a group completed by a report stored later with an older date (an import by the CLI) is verified", async () => {
      const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
      await f.reports.submit(a, reportInput("203.0.113.7"));
      await f.reports.submit(b, reportInput("203.0.113.7"));
      f.clock.advance(60_000);
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
      expect(rows(f.store, "SELECT value FROM meta WHERE key = 'community_verification_cursor'")).toEqual([
        { value: JSON.stringify({ id: 2, at: f.clock.now(), dated: false }) },
      ]);
      insertImported(c, "203.0.113.7", T0 - 3 * DAY_MS);
      f.clock.advance(60_000);
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 1, verified: 3 });
      expect(statuses()).toEqual(["verified", "verified", "verified"]);
    });

    test("a report stored later dated before the last 7 days still completes a span that reaches into them", async () => {
      const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
      await f.reports.submit(a, reportInput("203.0.113.8"));
      await f.reports.submit(b, reportInput("203.0.113.8"));
      f.clock.advance(60_000);
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
      // Six days on, an import dated a day and a half before the first two: eight days back from now, but within
      // 7 days of them, and their span reaches into the last 7 days.
      f.clock.advance(6 * DAY_MS);
      insertImported(c, "203.0.113.8", T0 - 36 * HOUR);
      f.clock.advance(60_000);
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 1, verified: 3 });
      expect(statuses()).toEqual(["verified", "verified", "verified"]);
    });

    test("reports dated after a run's time but stored before it count at the next run", async () => {
      const users = [f.addUser(), f.addUser(), f.addUser()];
      f.clock.advance(HOUR);
      for (const u of users) await f.reports.submit(u, reportInput("203.0.113.7")); // dated T0 + 1 h
      // A run for T0 (a CLI run with its own clock, say) sees nothing in its window...
      expect(f.states.verifyCommunity(T0)).toEqual({ groups: 0, verified: 0 });
      // ...and the next one, with no report stored since, still finds the group.
      f.clock.advance(HOUR);
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 1, verified: 3 });
    });

    test("a run for a time before the last run's scans everything again", async () => {
      const users = [f.addUser(), f.addUser(), f.addUser()];
      for (const u of users) await f.reports.submit(u, reportInput("203.0.113.7")); // dated T0
      // Eight days on the reports have left the window...
      expect(f.states.verifyCommunity(T0 + 8 * DAY_MS)).toEqual({ groups: 0, verified: 0 });
      // ...and a run for T0 + 1 min has them in its window again, with nothing new since the last run.
      expect(f.states.verifyCommunity(T0 + 60_000)).toEqual({ groups: 1, verified: 3 });
    });

    test("more new reports than one step: taken a step at a time, with requests served between, no group missed", async () => {
      const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
      const at = f.clock.now() - 60_000;
      // Two reporters of 203.0.113.7/SSH (ids 1 and 2), seen by a run: not eligible yet.
      insertImported(a, "203.0.113.7", at);
      insertImported(b, "203.0.113.7", at);
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
      // 45,000 more (ids 3 to 45,002: steps of 5,000 after id 2); the third reporter comes with the first id of the
      // fifth step (20,003), and no other group reaches three.
      f.store.sqlite.transaction(() => {
        for (let id = 3; id <= 45_002; id++) {
          if (id === 20_003) insertImported(c, "203.0.113.7", at);
          else insertImported(a, `10.${id >> 16}.${(id >> 8) & 255}.${id & 255}`, at);
        }
      })();
      f.clock.advance(60_000);
      let turned = false;
      setImmediate(() => (turned = true));
      expect(await f.states.verifyCommunityInTurns(f.clock.now())).toEqual({ groups: 1, verified: 3 });
      expect(turned).toBe(true);
      expect(rows(f.store, "SELECT id FROM reports WHERE status = 'verified' ORDER BY id")).toEqual([{ id: 1 }, { id: 2 }, { id: 20_003 }]);
      expect(rows(f.store, "SELECT value FROM meta WHERE key = 'community_verification_cursor'")).toEqual([{ value: JSON.stringify({ id: 45_002, at: f.clock.now(), dated: false }) }]);
    });

    test("an unrelated new report does not bring back groups already done", async () => {
      for (const u of [f.addUser(), f.addUser(), f.addUser()]) await f.reports.submit(u, reportInput("203.0.113.7"));
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 1, verified: 3 });
      f.clock.advance(60_000);
      await f.reports.submit(f.addUser(), reportInput("198.51.100.9"));
      expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
    });
  });

  test("rejected reports do not count towards the 3 reporters", async () => {
    const users = [f.addUser(), f.addUser(), f.addUser()];
    for (const u of users) await f.reports.submit(u, reportInput("203.0.113.7"));
    const admin = f.addUser();
    f.states.setStatus(1, "rejected", admin, f.clock.now());
    expect(f.states.verifyCommunity(f.clock.now())).toEqual({ groups: 0, verified: 0 });
  });
});

describe("an admin's verify and reject", () => {
  test("verify: pending → verified, +2 credits, one ip.verified, transition by the admin", async () => {
    const [a, admin] = [f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7", "PHISHING", 4));
    f.clock.advance(HOUR);
    const at = f.clock.now();
    const view = f.states.setStatus(1, "verified", admin, at);
    expect(view).toEqual({
      id: "1",
      ipAddress: "203.0.113.7",
      reporterId: String(a),
      category: "PHISHING",
      severity: 4,
      description: "",
      evidence: null,
      status: "verified",
      source: "api",
      createdAt: "2026-11-21T08:00:00.000Z",
      statusChangedAt: "2026-11-21T09:00:00.000Z",
      transitions: [
        { from: null, to: "pending", at: "2026-11-21T08:00:00.000Z", actorUserId: String(a), reason: "api" },
        { from: "pending", to: "verified", at: "2026-11-21T09:00:00.000Z", actorUserId: String(admin), reason: "admin" },
      ],
    });
    expect(f.credits.balance(a)).toMatchObject({ balance: 3, lifetimeEarned: 3, reportsVerified: 1 });
    // severity 4 verified, 1 h old: 0.8 × 2 × 0.5^(1/720) = 1.59846, over the per-reporter cap: 1.5,
    // round(100 × e^(−1)) = 37
    expect(outboxData(f.store, "ip.verified")).toEqual([{ ip: "203.0.113.7", category: "phishing", confidence: 63, reporter_id: String(a), reportId: "1" }]);
    expect(indexed(f.index, "203.0.113.7")).toMatchObject({ reputationScore: 37, verifiedReports: 1 });
  });

  test("reject a pending report: −1 credit, it stops counting, the address leaves the index", async () => {
    const [a, admin] = [f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7"));
    expect(indexed(f.index, "203.0.113.7")).not.toBeNull();
    f.clock.advance(HOUR);
    const view = f.states.setStatus(1, "rejected", admin, f.clock.now());
    expect(view.status).toBe("rejected");
    expect(view.transitions.at(-1)).toEqual({ from: "pending", to: "rejected", at: "2026-11-21T09:00:00.000Z", actorUserId: String(admin), reason: "admin" });
    expect(rows(f.store, "SELECT delta, reason, report_id FROM credit_ledger ORDER BY id")).toEqual([
      { delta: 1, reason: "report_accepted", report_id: 1 },
      { delta: -1, reason: "report_rejected", report_id: 1 },
    ]);
    expect(f.credits.balance(a)).toEqual({ balance: 0, lifetimeEarned: 1, reportsAccepted: 1, reportsVerified: 0, updatedAt: "2026-11-21T09:00:00.000Z" });
    expect(indexed(f.index, "203.0.113.7")).toBeNull();
    expect(rows(f.store, "SELECT count(*) AS n FROM addresses")).toEqual([{ n: 0 }]);
    expect(f.announced).toEqual(["203.0.113.7", "203.0.113.7"]);
  });

  test("reject a verified report: −1 and −2, and the verified weight is gone from the score", async () => {
    const users = [f.addUser(), f.addUser(), f.addUser()];
    const admin = f.addUser();
    for (const u of users) await f.reports.submit(u, reportInput("203.0.113.7"));
    f.states.verifyCommunity(f.clock.now());
    f.states.setStatus(2, "rejected", admin, f.clock.now());
    expect(rows(f.store, "SELECT delta, reason FROM credit_ledger WHERE report_id = 2 ORDER BY id")).toEqual([
      { delta: 1, reason: "report_accepted" },
      { delta: 2, reason: "report_verified" },
      { delta: -1, reason: "report_rejected" },
      { delta: -2, reason: "verification_reversed" },
    ]);
    expect(f.credits.balance(users[1])).toMatchObject({ balance: 0, lifetimeEarned: 3, reportsAccepted: 1, reportsVerified: 1 });
    expect(f.credits.balance(users[0]).balance).toBe(3);
    // Two verified severity-3 reports left: Σw = 2.4, round(100 × e^(−1.6)) = 20
    expect(indexed(f.index, "203.0.113.7")).toMatchObject({ reputationScore: 20, totalReports: 2, verifiedReports: 2 });
  });

  test("setting the status a report already has changes nothing", async () => {
    const [a, admin] = [f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7"));
    f.states.setStatus(1, "rejected", admin, f.clock.now());
    const again = f.states.setStatus(1, "rejected", admin, f.clock.now() + HOUR);
    expect(again.transitions.length).toBe(2);
    expect(f.credits.balance(a).balance).toBe(0);
  });

  test("a rejected report cannot be verified; an expired one cannot be verified or rejected (409)", async () => {
    const [a, admin] = [f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7"));
    await f.reports.submit(a, reportInput("203.0.113.8"));
    f.states.setStatus(1, "rejected", admin, f.clock.now());
    expect(thrown(() => f.states.setStatus(1, "verified", admin, f.clock.now()))).toMatchObject({ errorCode: "conflict", status: 409 });
    f.clock.advance(366 * DAY_MS);
    await f.states.expireReports(f.clock.now());
    expect(thrown(() => f.states.setStatus(2, "verified", admin, f.clock.now())).errorCode).toBe("conflict");
    expect(thrown(() => f.states.setStatus(2, "rejected", admin, f.clock.now())).errorCode).toBe("conflict");
  });

  test("an unknown report is 404", () => {
    expect(thrown(() => f.states.setStatus(42, "verified", 1, f.clock.now()))).toMatchObject({ errorCode: "not_found", status: 404 });
    expect(thrown(() => f.states.get(42)).errorCode).toBe("not_found");
  });
});

describe("expiry", () => {
  test("reports past retention become expired, whatever their state; the address is rescored", async () => {
    const [a, b, admin] = [f.addUser(), f.addUser(), f.addUser()];
    await f.reports.submit(a, reportInput("203.0.113.7")); // 1
    await f.reports.submit(b, reportInput("203.0.113.8")); // 2
    await f.reports.submit(a, reportInput("203.0.113.9")); // 3
    f.states.setStatus(2, "rejected", admin, f.clock.now());
    f.states.setStatus(3, "verified", admin, f.clock.now());
    f.clock.advance(10 * DAY_MS);
    await f.reports.submit(b, reportInput("203.0.113.7")); // 4, ten days younger

    // Exactly 365 days old still counts.
    f.clock.set(T0 + 365 * DAY_MS);
    expect(await f.states.expireReports(f.clock.now())).toEqual({ expired: 0, addresses: 0 });

    f.clock.set(T0 + 365 * DAY_MS + 1);
    const at = f.clock.now();
    expect(await f.states.expireReports(at)).toEqual({ expired: 3, addresses: 2 });
    expect(statuses()).toEqual(["expired", "expired", "expired", "pending"]);
    expect(rows(f.store, "SELECT report_id, from_status, to_status, at, actor_user_id, reason FROM report_transitions WHERE to_status = 'expired' ORDER BY report_id")).toEqual([
      { report_id: 1, from_status: "pending", to_status: "expired", at, actor_user_id: null, reason: "retention" },
      { report_id: 2, from_status: "rejected", to_status: "expired", at, actor_user_id: null, reason: "retention" },
      { report_id: 3, from_status: "verified", to_status: "expired", at, actor_user_id: null, reason: "retention" },
    ]);
    // .9 had only the expired report: gone. .7 keeps report 4 (355 days old).
    expect(indexed(f.index, "203.0.113.9")).toBeNull();
    expect(indexed(f.index, "203.0.113.7")).toMatchObject({ totalReports: 1, firstSeenMs: T0 + 10 * DAY_MS });
    // Credits are untouched by expiry.
    expect(f.credits.balance(a).balance).toBe(4);
    expect(await f.states.expireReports(at)).toEqual({ expired: 0, addresses: 0 });
  });

  test("an expiry of more than one chunk takes every report and serves requests between chunks", async () => {
    const a = f.addUser();
    const insert = f.store.sqlite.query(
      `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
       VALUES (?, 4, ?, 'BRUTE_FORCE', 3, '', 'pending', 'import', ?, ?)`,
    );
    const t = f.clock.now();
    f.store.sqlite.transaction(() => {
      for (let i = 0; i < 2_500; i++) insert.run(`198.51.${i >> 8}.${i & 255}`, a, t, t);
    })();
    f.clock.advance(366 * DAY_MS);
    let turned = false;
    setImmediate(() => (turned = true));
    expect(await f.states.expireReports(f.clock.now())).toEqual({ expired: 2_500, addresses: 2_500 });
    expect(turned).toBe(true);
    expect(rows(f.store, "SELECT count(*) AS n FROM reports WHERE status = 'expired'")).toEqual([{ n: 2_500 }]);
  });

  test("a live report stored between two chunks: the later chunk scores the address at the clock's time, never before that report", async () => {
    const [a, b, c] = [f.addUser(), f.addUser(), f.addUser()];
    const ip = "203.0.113.7";
    const insert = f.store.sqlite.query(
      `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
       VALUES (?, 4, ?, 'SSH', 3, '', 'pending', 'import', ?, ?)`,
    );
    const t = f.clock.now();
    f.store.sqlite.transaction(() => {
      for (let i = 0; i < 1_500; i++) insert.run(ip, a, t + i, t + i);
      insert.run(ip, b, t + 200 * DAY_MS, t + 200 * DAY_MS);
    })();
    f.clock.advance(366 * DAY_MS);
    const at = f.clock.now();
    let liveAt: number | null = null;
    // After the first chunk (1,000 reports), before the second.
    setImmediate(() => {
      f.clock.advance(60_000);
      liveAt = f.clock.now();
      void f.reports.submit(c, reportInput(ip));
      f.reports.flush();
    });
    expect(await f.states.expireReports(at)).toEqual({ expired: 1_500, addresses: 1 });
    expect(rows(f.store, "SELECT DISTINCT at FROM report_transitions WHERE to_status = 'expired'")).toEqual([{ at }]);
    // At `at` the address would be scored before c's report, which only its reports can answer (every one read
    // again); intake had scored it at c's time already.
    const stored = rows(f.store, "SELECT scored_at AS scoredAt, reputation_score AS score, total_reports AS total FROM addresses WHERE ip = ?", ip)[0];
    const evaluated = createAddressScorer(f.store, DEFAULT_SCORING_PARAMETERS, { persist: false }).evaluate(parseIp(ip), liveAt!).record!;
    expect(stored).toEqual({ scoredAt: liveAt!, score: evaluated.reputationScore, total: 2 });
    expect(indexed(f.index, ip)).toEqual(evaluated);
  });
});
