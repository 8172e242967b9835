// Threat patterns in the store (contract section 9): the `detect-threats` job's run (recent counting reports →
// patterns → a `threats` row and a `threat.detected` event in one transaction, each pattern at most once per
// 24 hours) and the listing behind `GET /v1/threats`.
//
// Decisions where the contract is open:
// - Detection looks at counting reports (pending or verified) created in the last window plus a slack
//   (default 10 minutes), so a burst whose first report left the window just before a run is still seen by the
//   next run. Bursts older than that are not reported after the fact (after downtime, say).
// - The event's `confidence` is the highest abuse_confidence among the pattern's addresses when detected.

import { type DetectionStatements, detectionStatements, type ThreatReportRow, type ThreatRow, threatListingStatements } from "../../store/threats";
import type { Category } from "../../domain/categories";
import { type Clock, isoTime } from "../../domain/clock";
import { type Ip, parseIp } from "../../domain/ip";
import { abuseConfidence } from "../../domain/scoring";
import type { DetectedPattern, ThreatKind, ThreatThresholds } from "../../domain/threat-patterns";
import { DEFAULT_WINDOW_REPORTS, ThreatWindow } from "../../domain/threat-window";
import { inReadTransaction, inTransaction, type Store } from "../../store/database";
import { reportDeletions } from "../../store/report-deletions";
import { inTurns, nextTurn } from "../event-loop-turns";
import { enqueueEvent } from "../webhooks/outbox";

/** How much further back than the window each run looks (see the module comment). */
export const DEFAULT_SCAN_SLACK_MS = 10 * 60_000;
/**
 * Reports read and taken in per turn of the event loop. Under heavy ingest a minute brings hundreds of thousands
 * of reports; read in one piece they held every request for 0.5-0.7 s once a minute (at 11k reports/s). Chunks of
 * 10,000 still left such a round with a p99 of 60-160 ms, chunks of 2,000 with 47-63 ms.
 */
export const DEFAULT_DETECT_CHUNK = 2_000;
/** When the window is over its limit, it is cut to this share of it, so a sweep of it is not made every chunk. */
const WINDOW_CUT_TO = 0.9;

/** A threat as `GET /v1/threats` shows it. */
export interface ThreatView {
  id: string;
  kind: ThreatKind;
  /** The subnet of a burst; the smallest network covering a campaign's addresses. */
  cidr: string;
  asn: number | null;
  category: Category | null;
  ipCount: number;
  addresses: string[];
  windowStart: string;
  windowEnd: string;
  detectedAt: string;
}

export interface DetectSummary {
  /** Counting reports looked at. */
  reports: number;
  /** Patterns found in them. */
  patterns: number;
  /** Of those, newly stored and announced. */
  detected: number;
  /** Of those, already reported within the repeat period. */
  suppressed: number;
  threatIds: string[];
  /** Reports taken out of the window before their time by this pass, to keep it within its limit. */
  dropped: number;
}


export interface ThreatServiceDeps {
  store: Store;
  clock: Clock;
  /** Where an address's autonomous system comes from (the enrichment). */
  asnOf: (ip: Ip) => number | null;
  thresholds: ThreatThresholds;
  scanSlackMs?: number;
  /** Reports read per turn of the event loop (default DEFAULT_DETECT_CHUNK). */
  detectChunk?: number;
  /** Reports the window holds at most (default DEFAULT_WINDOW_REPORTS, the --threat-window-reports option). */
  windowReports?: number;
  /** Called after a commit that queued events (the composition nudges the webhook dispatcher). */
  onEventQueued?: () => void;
}

export class ThreatService {
  readonly thresholds: ThreatThresholds;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly asnOf: (ip: Ip) => number | null;
  private readonly scanSlackMs: number;
  private readonly detectChunk: number;
  private readonly windowReports: number;
  private readonly onEventQueued: () => void;
  private readonly stmt;
  private detectStmt: DetectionStatements | null = null;
  /** The reports of the window at the last pass (see detect), that pass's time, and the newest report id then. */
  private window: ThreatWindow | null = null;
  private windowAt = Number.NEGATIVE_INFINITY;
  private seenThroughId = 0;
  /** Whether a report read by the last pass's time was dated after it (see datedSince below). */
  private datedAfterWindow = true;
  /** The store's count of report deletions when the window was last complete (see detect). */
  private deletionsSeen = "";

  constructor(deps: ThreatServiceDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.asnOf = deps.asnOf;
    this.thresholds = deps.thresholds;
    this.scanSlackMs = deps.scanSlackMs ?? DEFAULT_SCAN_SLACK_MS;
    this.detectChunk = deps.detectChunk ?? DEFAULT_DETECT_CHUNK;
    this.windowReports = deps.windowReports ?? DEFAULT_WINDOW_REPORTS;
    this.onEventQueued = deps.onEventQueued ?? (() => {});
    // Only the listing is prepared here: a read-only snapshot store has a `threats` table and nothing to detect
    // in; detection's statements are prepared on its first run.
    this.stmt = threatListingStatements(deps.store.sqlite);
  }

  /**
   * One detection pass at `nowMs`: finds the patterns among recent counting reports and stores and announces
   * each one not already reported within the repeat period. The reports are kept in a ThreatWindow between
   * passes: the first pass (and one for a time before the last's, or after reports were deleted) reads the whole
   * window, later ones the reports stored since (or dated since: stored earlier with a later clock), and drop the
   * ones rejected meanwhile. The reports are read outside the write lock; the repeat check, the row and the event are one transaction, so
   * two passes at once (the server and a CLI run) cannot both announce a pattern.
   *
   * The reports are read a chunk at a time (detectChunk), with a turn of the event loop between chunks, up to the
   * newest report id when the pass began: reports committed meanwhile have higher ids and are the next pass's.
   * Whenever the window passes its limit (windowReports), the reports added first leave it (see `dropped`).
   */
  async detect(nowMs: number = this.clock.now()): Promise<DetectSummary> {
    const now = Math.trunc(nowMs);
    const t = this.thresholds;
    const start = now - t.windowMs - this.scanSlackMs;
    const stmt = (this.detectStmt ??= detectionStatements(this.store.sqlite));
    // Reports deleted since the last pass (clear-address) may be in the window: it is read again whole.
    const deletions = reportDeletions(this.store.sqlite);
    const whole = this.window === null || now < this.windowAt || deletions !== this.deletionsSeen;
    const window = whole ? new ThreatWindow(t) : (this.window as ThreatWindow);
    this.window = null; // until this pass has succeeded: a failed one leaves the next to read everything
    const chunk = this.detectChunk;
    let dropped = 0;
    const take = async (rows: readonly ThreatReportRow[]) => {
      for (const r of rows) {
        const ip = parseIp(r.ip);
        window.add({ id: r.id, ip, category: r.category as Category, atMs: r.createdAt, asn: this.asnOf(ip) });
      }
      // Over the limit, the oldest leave (the ones the window slid past went before any row was read, and every row
      // read is dated at or after `start`): `dropped` counts only reports that leave before their time.
      if (window.size > this.windowReports) dropped += await inTurns(window.forgetOldestInSteps(Math.floor(this.windowReports * WINDOW_CUT_TO), chunk));
    };
    const { throughId, rejected, datedSince, datedAfter } = inReadTransaction(this.store, () => {
      const throughId = stmt.lastId.get()!.id;
      return {
        throughId,
        rejected: whole ? [] : stmt.rejected.all(start, now),
        // Stored by the last pass, dated since it (a clock ahead): few, read at once, and only when the last pass
        // saw such a report (the query scans every report dated since, the last minute's ingest included).
        datedSince: whole || !this.datedAfterWindow ? [] : stmt.datedSince.all(Math.max(this.windowAt, start - 1), now, this.seenThroughId),
        datedAfter: stmt.datedAfter.get(now, throughId) !== null,
      };
    });
    for (const r of rejected) window.remove(r.id);
    await inTurns(window.forgetBeforeInSteps(start, chunk));
    await take(datedSince);
    // The whole window in created_at order, or what was stored since the last pass in id order: after the last row
    // of the chunk before.
    let last: ThreatReportRow | null = null;
    for (;;) {
      const rows: ThreatReportRow[] = whole
        ? stmt.recent.all(last?.createdAt ?? start, last?.id ?? 0, now, throughId, chunk)
        : stmt.storedSince.all(last?.id ?? this.seenThroughId, throughId, start, now, chunk);
      await take(rows);
      if (rows.length < chunk) break;
      last = rows[rows.length - 1]!;
      await nextTurn();
    }
    const patterns = await inTurns(window.takePatternsInSteps(chunk));
    const threatIds: string[] = [];
    if (patterns.length > 0) {
      inTransaction(this.store, () => {
        for (const p of patterns) {
          if (stmt.detectedSince.get(p.patternKey, now - t.repeatAfterMs)) continue;
          threatIds.push(String(this.record(stmt, p, now)));
        }
      });
    }
    this.window = window;
    this.windowAt = now;
    this.deletionsSeen = deletions;
    this.seenThroughId = throughId;
    this.datedAfterWindow = datedAfter;
    if (threatIds.length > 0) this.onEventQueued();
    return { reports: window.size, patterns: patterns.length, detected: threatIds.length, suppressed: patterns.length - threatIds.length, threatIds, dropped };
  }

  /** Threats newest first, and how many there are. */
  list(limit: number, offset: number): { rows: ThreatView[]; total: number } {
    return { rows: this.stmt.page.all(limit, offset).map(view), total: this.stmt.count.get()!.n };
  }

  /** The row and its event, inside the caller's transaction; returns the threat's id. */
  private record(stmt: DetectionStatements, p: DetectedPattern, now: number): number {
    const addresses = JSON.stringify(p.addresses);
    const id = stmt.insert.get(p.kind, p.patternKey, p.cidr, p.asn, p.category, p.addresses.length, addresses, p.windowStartMs, p.windowEndMs, now)!.id;
    const lowest = stmt.lowestScore.get(addresses)?.score ?? 100;
    enqueueEvent(
      this.store,
      "threat.detected",
      { cidr: p.cidr, category: p.category, confidence: abuseConfidence(lowest), kind: p.kind, threatId: id, ipCount: p.addresses.length, asn: p.asn },
      now,
    );
    return id;
  }
}



function view(row: ThreatRow): ThreatView {
  return {
    id: String(row.id),
    kind: row.kind,
    cidr: row.cidr ?? "",
    asn: row.asn,
    category: row.category as Category | null,
    ipCount: row.ipCount,
    addresses: JSON.parse(row.addresses) as string[],
    windowStart: isoTime(row.windowStart),
    windowEnd: isoTime(row.windowEnd),
    detectedAt: isoTime(row.detectedAt),
  };
}
