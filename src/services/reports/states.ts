// Report states after submission (contract 5.5): community verification (the `verify` job), an admin's verify or
// reject, and expiry past retention (the `expire` job). Every transition is a row with its time; credits move with
// it (5.6); becoming verified queues one `ip.verified` event per report. Each change is one transaction, and the
// index hears of rescored addresses only after the commit.
//
// Decisions where the contract is open:
// - Community verification: a group (address, category) whose counting reports (pending or verified) from at least
//   3 distinct reporters lie within 7 days of each other, in a span reaching into the last 7 days, has the pending
//   reports of that span verified (domain/community-verification.ts). Run every minute, this finds every such group
//   as soon as the third reporter arrives, however late the run; old imported history is not verified after the
//   fact.
// - An admin may verify a pending report and reject a pending or verified one. Setting the status a report already
//   has changes nothing and is not an error; any other change (of a rejected or expired report) is 409 conflict.
// - Expiry takes every report past retention to `expired`, rejected ones included, in chunks of 1,000 per
//   transaction so a large backlog never holds the write lock for long.

import { type GroupReportRow, type ReportRow, reportStateStatements } from "../../store/report-states";
import type { Category } from "../../domain/categories";
import { type Clock, isoTime } from "../../domain/clock";
import { AppError, notFound } from "../../domain/errors";
import { parseIp } from "../../domain/ip";
import { abuseConfidence, DAY_MS, type ReportStatus, retentionCutoffMs, type ScoringParameters, type Severity } from "../../domain/scoring";
import { inTransaction, type Store } from "../../store/database";
import { AddressChanges, AddressChangePublisher } from "../changes/address-changes";
import type { AddressRecord } from "../../index/reputation-index";
import type { AddressScorer } from "./scorer";
import { CREDITS_FOR_VERIFIED_REPORT, CreditLedger } from "./credits";
import { allAtOnce } from "../../domain/steps";
import { inTurns, nextTurn } from "../event-loop-turns";
import { enqueueEvent } from "../webhooks/outbox";
import type { ReportSource } from "./intake";
import { verifiablePendingInSteps } from "../../domain/community-verification";

export const COMMUNITY_WINDOW_MS = 7 * DAY_MS;
export const COMMUNITY_MIN_REPORTERS = 3;
/** The `meta` key of community verification's cursor (see startOfScan). */
const COMMUNITY_CURSOR_KEY = "community_verification_cursor";
/**
 * Reports expired per transaction, with a turn of the event loop between two: a report costs about 50 µs (its
 * transition and its address's rescore), so 1,000 hold requests for some 50 ms. An hour's expiry at a steady
 * 100 reports/s a year ago is 360,000 reports, which in one piece held every request for about 20 s.
 */
const EXPIRE_CHUNK = 1_000;
/**
 * New reports whose groups one transaction of community verification looks at. Under heavy ingest a minute
 * brings hundreds of thousands; looked at in one transaction they held every request for about 80 ms. Each step
 * is a transaction of its own.
 */
const VERIFY_STEP_REPORTS = 5_000;
/**
 * Reports verified per transaction, with a turn of the event loop between two: a report costs about 50 µs (its
 * status, transition, credit and event), so 300 hold requests for some 15 ms. A group flooded by one reporter
 * first verified 60,000 in one transaction, holding every request for 3.1 s.
 */
const VERIFY_CHUNK = 300;
/**
 * A group's reports read per turn: 4,096 cost 2-8 ms. A group flooded by one reporter with 200,000 reports has
 * ~121,000 in the 14 days read; read whole every minute it got a report they held requests for 250-440 ms.
 */
const GROUP_PAGE_REPORTS = 4_096;
const COMMUNITY_REASON = "community: 3 or more distinct reporters within 7 days";

/** A report community verification is to verify, with its group. */
interface CommunityVerification {
  id: number;
  reporterId: number;
  source: ReportSource;
  ip: string;
  category: Category;
}

/** A community-verification group: one address and category. */
interface Group {
  ip: string;
  category: string;
}

interface EligibleGroup extends Group {
  /** Its pending reports to verify, by id. */
  pending: GroupReportRow[];
}

/**
 * Community verification's position (`meta`): the newest report id looked at, the time of that scan, and whether
 * a report up to that id was dated after that time (absent in older cursors: assumed).
 */
interface CommunityCursor {
  id: number;
  at: number;
  dated?: boolean;
}

/** A report as `GET /v1/admin/reports/{id}` shows it. */
export interface ReportView {
  id: string;
  ipAddress: string;
  reporterId: string;
  category: Category;
  severity: Severity;
  description: string;
  evidence: string | null;
  status: ReportStatus;
  source: ReportSource;
  createdAt: string;
  statusChangedAt: string;
  transitions: TransitionView[];
}

export interface TransitionView {
  from: ReportStatus | null;
  to: ReportStatus;
  at: string;
  /** Who made it: the reporter (submission) or an admin; null for the system (community verification, expiry). */
  actorUserId: string | null;
  reason: string | null;
}

export interface VerifySummary {
  /** (address, category) groups that reached 3 distinct reporters. */
  groups: number;
  /** Reports that became verified. */
  verified: number;
}

export interface ExpireSummary {
  expired: number;
  /** Addresses rescored because a counting report of theirs expired. */
  addresses: number;
}

export type AdminStatus = "verified" | "rejected";


export interface ReportStateDeps {
  store: Store;
  clock: Clock;
  scorer: AddressScorer;
  params: ScoringParameters;
  changes: AddressChangePublisher;
  onEventQueued?: () => void;
}

export class ReportStateService {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly scorer: AddressScorer;
  private readonly params: ScoringParameters;
  private readonly publisher: AddressChangePublisher;
  private readonly onEventQueued: () => void;
  private readonly ledger: CreditLedger;
  private readonly stmt;

  constructor(deps: ReportStateDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.scorer = deps.scorer;
    this.params = deps.params;
    this.publisher = deps.changes;
    this.onEventQueued = deps.onEventQueued ?? (() => {});
    this.ledger = new CreditLedger(deps.store);
    this.stmt = reportStateStatements(deps.store.sqlite);
  }


  /** A report with its transitions, oldest first; 404 when there is none. */
  get(reportId: number): ReportView {
    const row = this.stmt.report.get(reportId);
    if (!row) throw notFound(`No report ${reportId}`);
    return this.view(row);
  }

  /**
   * Community verification at `nowMs` (what the `verify` job runs every minute): every pending report of a group
   * with ≥ 3 distinct reporters within the last 7 days becomes verified, its reporter earns +2 credits (live
   * reports only: imports earn no credits), one `ip.verified` per report; the affected addresses are rescored.
   */
  verifyCommunity(nowMs: number = this.clock.now()): VerifySummary {
    return allAtOnce(this.verifyCommunitySteps(nowMs));
  }

  /** verifyCommunity with a turn of the event loop between its transactions (what the job runs). */
  verifyCommunityInTurns(nowMs: number = this.clock.now()): Promise<VerifySummary> {
    return inTurns(this.verifyCommunitySteps(nowMs));
  }

  /**
   * verifyCommunity a step at a time: each step looks at the groups of at most VERIFY_STEP_REPORTS new reports,
   * up to the newest report when it began (later ones are the next run's), and verifies what it found
   * VERIFY_CHUNK reports per transaction. The cursor is stored with the step's last chunk (or alone when done with
   * nothing to verify): a run cut short between chunks leaves the rest pending, and the next run finds them again.
   */
  private *verifyCommunitySteps(nowMs: number): Generator<void, VerifySummary> {
    const now = Math.trunc(nowMs);
    const since = now - COMMUNITY_WINDOW_MS;
    const untilId = this.stmt.lastReportId.get()!.id;
    const total: VerifySummary = { groups: 0, verified: 0 };
    // Where this run has got to; the first step reads it from `meta`.
    let position: CommunityCursor | null = null;
    for (;;) {
      const { candidates, next, done } = inTransaction(this.store, () => this.candidateGroups(position ?? this.startOfScan(now), since, now, untilId));
      const groups = yield* this.withPending(candidates, since, now);
      // A step with nothing to verify commits nothing (no sync) unless it is the last.
      if (done && groups.length === 0) inTransaction(this.store, () => this.stmt.writeCursor.run(COMMUNITY_CURSOR_KEY, JSON.stringify(next)));
      const count = groups.reduce((n, g) => n + g.pending.length, 0);
      let chunk: CommunityVerification[] = [];
      let seen = 0;
      for (const g of groups) {
        for (const r of g.pending) {
          chunk.push({ id: r.id, reporterId: r.reporterId, source: r.source, ip: g.ip, category: g.category as Category });
          if (++seen % VERIFY_CHUNK !== 0 && seen !== count) continue;
          yield;
          total.verified += this.verifyChunk(chunk, now, seen === count ? next : null);
          chunk = [];
        }
      }
      position = next;
      total.groups += groups.length;
      if (done) return total;
      yield;
    }
  }

  /**
   * One transaction of community verification: the reports of `chunk` still pending become verified, their
   * addresses are rescored and announced; `cursor`, when given, is stored with them. Returns how many it verified.
   */
  private verifyChunk(chunk: readonly CommunityVerification[], now: number, cursor: CommunityCursor | null): number {
    const changes = new AddressChanges();
    const verified = inTransaction(this.store, () => {
      const done = chunk.filter((r) => this.verify(r.id, r.reporterId, r.source, now, null, COMMUNITY_REASON, true));
      this.rescoreAndAnnounce(done, now, changes, this.stepTime(now));
      if (cursor !== null) this.stmt.writeCursor.run(COMMUNITY_CURSOR_KEY, JSON.stringify(cursor));
      return done.length;
    });
    this.publisher.publish(changes);
    if (verified > 0) this.onEventQueued();
    return verified;
  }

  /**
   * Where a run starts. A group becomes eligible only through a report that is new since the last scan (stored
   * after it, or dated after it): rejection, expiry and a sliding window only ever take reporters away. So each
   * run looks at those groups alone, from the cursor kept in `meta` (the newest report id and the time of the
   * last scan) instead of grouping a week of reports every minute (1.3 s with 500,000 reports, holding the write
   * lock). With no cursor (a first run), or a `now` before the cursor's, null: the scan is full, one
   * transaction grouping the last 14 days (583 ms at 840,000 reports when it grouped 7, once per data directory). Going through every
   * report in steps instead (a query per group) cost far more: an ingest round it fell into dropped from about
   * 11,300 to 8,400 reports/s.
   */
  private startOfScan(now: number): CommunityCursor | null {
    const stored = this.stmt.readCursor.get(COMMUNITY_CURSOR_KEY)?.value;
    const cursor = stored === undefined ? null : (JSON.parse(stored) as CommunityCursor);
    return cursor === null || !(now >= cursor.at) ? null : cursor;
  }

  /**
   * One step's groups: those of the reports stored after `from`'s id, up to VERIFY_STEP_REPORTS further (never
   * past `untilId`), and of those dated after its time: the candidates (withPending finds the eligible ones among
   * them, reading their reports in pages across turns); `next` is where the step got to (its
   * time `now`, so the next step's dated part is empty). `done` when it reached `untilId`.
   */
  private candidateGroups(from: CommunityCursor | null, since: number, now: number, untilId: number): { candidates: Group[]; next: CommunityCursor; done: boolean } {
    if (from === null) {
      const throughId = Math.max(untilId, this.stmt.lastReportId.get()!.id);
      // Groups with enough reporters since a span reaching `since` may start (withPending then checks the spans).
      const candidates = this.stmt.communityGroups.all(since - COMMUNITY_WINDOW_MS, now, COMMUNITY_MIN_REPORTERS);
      return { candidates, next: { id: throughId, at: now, dated: this.stmt.datedAfter.get(now, throughId) !== null }, done: true };
    }
    const throughId = Math.max(from.id, Math.min(untilId, from.id + VERIFY_STEP_REPORTS));
    // The dated part scans every report dated since the cursor's time (the last minute's ingest included): only
    // when one stored by then was dated after it can it find a group the id part does not.
    const datedFrom = from.dated === false ? now : Math.max(from.at, since - 1);
    // A new report dated up to 7 days before `since` can still complete a span that reaches it.
    const candidates = this.stmt.candidateGroups.all(from.id, throughId, since - COMMUNITY_WINDOW_MS, now, datedFrom, now);
    const dated = this.stmt.datedAfter.get(now, throughId) !== null;
    return { candidates, next: { id: throughId, at: now, dated }, done: throughId >= untilId };
  }

  /**
   * The groups among `candidates` with pending reports to verify, and those reports: a span of 7 days reaching
   * `since` or later may start up to 7 days before it, so the group's reports are read from there.
   */
  private *withPending(candidates: readonly Group[], since: number, now: number): Generator<void, EligibleGroup[]> {
    const out: EligibleGroup[] = [];
    for (const g of candidates) {
      const reports = yield* this.groupReports(g, since - COMMUNITY_WINDOW_MS, now);
      yield;
      const ids = yield* verifiablePendingInSteps(reports, since, COMMUNITY_WINDOW_MS, COMMUNITY_MIN_REPORTERS);
      if (ids.size === 0) continue;
      yield;
      // In id order, as announced before; already so unless a report was stored with an earlier date.
      const pending: GroupReportRow[] = [];
      for (let i = 0; i < reports.length; i++) {
        if (ids.has(reports[i]!.id)) pending.push(reports[i]!);
        if ((i + 1) % GROUP_PAGE_REPORTS === 0) yield;
      }
      if (!pending.every((r, i) => i === 0 || pending[i - 1]!.id < r.id)) pending.sort((a, b) => a.id - b.id);
      out.push({ ...g, pending });
    }
    return out;
  }

  /**
   * A group's counting reports created from `from` to `to`, oldest first, read GROUP_PAGE_REPORTS at a time with a
   * turn between two pages (outside any transaction: what a page reads may have changed by the next, as between
   * two runs; the chunks verify only reports still pending).
   */
  private *groupReports(g: Group, from: number, to: number): Generator<void, GroupReportRow[]> {
    const reports: GroupReportRow[] = [];
    let after = { at: from, id: 0 };
    for (;;) {
      const page = this.stmt.groupReportsPage.all(g.ip, g.category, after.at, after.id, to, GROUP_PAGE_REPORTS);
      for (const r of page) reports.push(r);
      if (page.length < GROUP_PAGE_REPORTS) return reports;
      const last = page[page.length - 1]!;
      after = { at: last.createdAt, id: last.id };
      yield;
    }
  }

  /** An admin's verify or reject (PATCH /v1/admin/reports/{id}); returns the report as it now is. */
  setStatus(reportId: number, status: AdminStatus, adminId: number, nowMs: number = this.clock.now()): ReportView {
    const now = Math.trunc(nowMs);
    const changes = new AddressChanges();
    let queued = false;
    inTransaction(this.store, () => {
      const row = this.stmt.report.get(reportId);
      if (!row) throw notFound(`No report ${reportId}`);
      if (row.status === status) return;
      if (status === "verified") {
        if (row.status !== "pending") throw conflict(`A ${row.status} report cannot be verified`);
        this.verify(row.id, row.reporterId, row.source, now, adminId, "admin");
        this.rescoreAndAnnounce([{ id: row.id, reporterId: row.reporterId, ip: row.ip, category: row.category as Category }], now, changes);
        queued = true;
      } else {
        if (row.status !== "pending" && row.status !== "verified") throw conflict(`A ${row.status} report cannot be rejected`);
        this.stmt.setStatus.run("rejected", now, row.id);
        this.stmt.insertTransition.run(row.id, row.status, "rejected", now, adminId, "admin");
        this.ledger.reverseReport(row.reporterId, row.id, now);
        const ip = parseIp(row.ip);
        changes.set(ip, this.scorer.rescore(ip, now));
      }
    });
    this.publisher.publish(changes);
    if (queued) this.onEventQueued();
    return this.get(reportId);
  }

  /**
   * Moves every report past retention at `nowMs` to `expired` (what the `expire` job runs hourly). Scoring already
   * ignores such reports; this records the transition and rescores the addresses that still listed them, a chunk
   * at a time (EXPIRE_CHUNK) with requests served in between.
   */
  async expireReports(nowMs: number = this.clock.now()): Promise<ExpireSummary> {
    const now = Math.trunc(nowMs);
    const cutoff = retentionCutoffMs(now, this.params);
    let expired = 0;
    const rescored = new Set<string>();
    for (;;) {
      const changes = new AddressChanges();
      const n = inTransaction(this.store, () => {
        const rows = this.stmt.pastRetention.all(cutoff, EXPIRE_CHUNK);
        const ips = new Set<string>();
        for (const r of rows) {
          this.stmt.setStatus.run("expired", now, r.id);
          this.stmt.insertTransition.run(r.id, r.status, "expired", now, null, "retention");
          if (r.status !== "rejected") ips.add(r.ip);
        }
        this.rescoreEach(ips, this.stepTime(now), changes);
        for (const text of ips) rescored.add(text);
        return rows.length;
      });
      this.publisher.publish(changes);
      expired += n;
      if (n < EXPIRE_CHUNK) break;
      await nextTurn();
    }
    return { expired, addresses: rescored.size };
  }

  /**
   * pending → verified for one report, with its transition and its reporter's +2 (inside a transaction). With
   * `ifPending`, only if it is still pending; returns whether it was verified.
   */
  private verify(reportId: number, reporterId: number, source: ReportSource, now: number, actor: number | null, reason: string, ifPending = false): boolean {
    if (ifPending) {
      if (this.stmt.verifyIfPending.run(now, reportId).changes === 0) return false;
    } else this.stmt.setStatus.run("verified", now, reportId);
    this.stmt.insertTransition.run(reportId, "pending", "verified", now, actor, reason);
    if (source !== "import") this.ledger.record(reporterId, CREDITS_FOR_VERIFIED_REPORT, "report_verified", reportId, now, { verified: 1 });
    return true;
  }

  /**
   * The time a transaction of a run that began at `runNow` rescores at: now, when later. A report stored since
   * the run began (dated on arrival) is then never ahead of it, so the scorer answers from its running sums; at a
   * time before a stored report it sums every report of the address again (0.9-1.2 s of CPU a chunk at 200,000,
   * loaded machine) and would write a score older than the one intake wrote.
   */
  private stepTime(runNow: number): number {
    return Math.max(runNow, Math.trunc(this.clock.now()));
  }

  /**
   * Rescores each address of `verified` once (at `scoredAt`, `now` unless given), then queues one ip.verified per
   * report, dated `now`, with the new confidence.
   */
  private rescoreAndAnnounce(
    verified: readonly { id: number; reporterId: number; ip: string; category: Category }[],
    now: number,
    changes: AddressChanges,
    scoredAt: number = now,
  ): void {
    const records = this.rescoreEach(new Set(verified.map((v) => v.ip)), scoredAt, changes);
    for (const v of verified) {
      const confidence = abuseConfidence(records.get(v.ip)?.reputationScore ?? 100);
      enqueueEvent(this.store, "ip.verified", { ip: v.ip, category: v.category, confidence, reporterId: v.reporterId, reportId: v.id }, now);
    }
  }

  /**
   * Rescores each address of `texts` at `now` (inside a transaction), the reports of all read in one statement
   * rather than one per address, and notes the records in `changes`; returns them by address.
   */
  private rescoreEach(texts: ReadonlySet<string>, now: number, changes: AddressChanges): Map<string, AddressRecord | null> {
    const byText = new Map<string, AddressRecord | null>();
    if (texts.size === 0) return byText;
    const list = [...texts];
    const addresses = list.map((text) => ({ ip: parseIp(text), nowMs: now }));
    const records = this.scorer.rescoreAll(addresses);
    addresses.forEach(({ ip }, i) => {
      changes.set(ip, records[i]!);
      byText.set(list[i]!, records[i]!);
    });
    return byText;
  }

  private view(row: ReportRow): ReportView {
    return {
      id: String(row.id),
      ipAddress: row.ip,
      reporterId: String(row.reporterId),
      category: row.category as Category,
      severity: row.severity as Severity,
      description: row.description,
      evidence: row.evidence,
      status: row.status,
      source: row.source,
      createdAt: isoTime(row.createdAt),
      statusChangedAt: isoTime(row.statusChangedAt),
      transitions: this.stmt.transitions.all(row.id).map((t) => ({
        from: t.fromStatus,
        to: t.toStatus,
        at: isoTime(t.at),
        actorUserId: t.actorUserId === null ? null : String(t.actorUserId),
        reason: t.reason,
      })),
    };
  }
}

function conflict(message: string): AppError {
  return new AppError("conflict", message);
}
