// Report ingest (contract 5.4): the 15-minute duplicate rule, the report with its first transition, its credit,
// the address rescored and the `ip.reported` outbox row, all committed before the caller answers 201.
//
// Group commit: a durable commit costs an fsync, far more than the statements of one report. Reports arriving
// together are queued and written in ONE immediate transaction per batch (flushed once the event loop has drained
// the sockets, or at once when the batch is full); every promise settles only after that commit, and each is rejected for its own
// errors (a duplicate, say) without failing the others. An unexpected failure of one report halfway through its
// writes rolls the batch back and writes it again with each report in a savepoint, so only that report fails
// (savepoints cost two statements a report, so the first attempt goes without). Each reporter's credit totals
// move once per batch, each address of a batch is rescored once, after its reports (their rows read in one
// statement), and each report's `ip.reported` event carries the address's confidence after the batch.

import { type ReportSource, reportIntakeStatements } from "../../store/reports";
import type { Category } from "../../domain/categories";
import { type Clock, isoTime } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import type { Ip } from "../../domain/ip";
import type { ReportInput } from "../../domain/report-input";
import { abuseConfidence, type Severity } from "../../domain/scoring";
import { busyError, inTransaction, inTransactionIfUnlocked, isBusyError, storageError, type Store } from "../../store/database";
import { AddressChanges, AddressChangePublisher } from "../changes/address-changes";
import type { AddressScorer } from "./scorer";
import { type BalanceAfterRow, CREDITS_FOR_ACCEPTED_REPORT, CreditLedger } from "./credits";
import { enqueueEvent } from "../webhooks/outbox";
import { type ForwardedResult, firstForwardedResults, forwardedReportStatements } from "../../store/forwarded-reports";

/** The same reporter may report the same address again only after this long (default; `--duplicate-window`). */
export const DUPLICATE_WINDOW_MS = 15 * 60_000;
/** A batch this large is written at once instead of waiting for the next macrotask. */
export const DEFAULT_MAX_BATCH = 256;
/** A batch waits at most this long for the sockets to drain (see scheduleFlush). */
export const GATHER_MAX_MS = 2;

export type { ReportSource } from "../../store/reports";

/** `data` of the 201 answer (the same for both payload shapes). */
export interface ReportAccepted {
  reportId: string;
  ipAddress: string;
  category: Category;
  severity: Severity;
  status: "pending";
  createdAt: string;
  creditsEarned: number;
  creditBalance: number;
}

export interface SubmitOptions {
  /** Default "api". */
  source?: ReportSource;
  /** The report's own time (an AbuseIPDB timestamp, checked by the caller), else it is dated on arrival. */
  atMs?: number;
  /**
   * Forwarded by an edge (contract 18): the edge's id of each report (one per input). Each id is stored once with
   * its first result, in the same transaction; a submission whose ids were stored before is rejected with
   * AlreadyForwarded carrying those results, and a duplicate's refusal is stored too.
   */
  forwardIds?: readonly string[];
}

export interface ReportServiceDeps {
  store: Store;
  clock: Clock;
  scorer: AddressScorer;
  /** Carries rescored addresses into the index and to listeners after each commit. */
  changes: AddressChangePublisher;
  /** Called after a commit that queued webhook events (the composition nudges the dispatcher). */
  onEventQueued?: () => void;
  maxBatch?: number;
  /** How long a batch may wait for another process's write lock (default BUSY_GIVE_UP_MS). */
  busyGiveUpMs?: number;
  /** The duplicate rule's window (default DUPLICATE_WINDOW_MS; 0: no rule). */
  duplicateWindowMs?: number;
}

interface Queued {
  reporterId: number;
  /** One report, or several about the same address (an /api/v2 report with several categories): one duplicate check. */
  inputs: readonly ReportInput[];
  source: ReportSource;
  /** The report's time: its own, or its arrival. */
  atMs: number;
  /** Its arrival: when it is credited and its address rescored. */
  nowMs: number;
  forwardIds: readonly string[] | undefined;
  /** performance.now() of the first write attempt that found the database busy, else null. */
  busySince: number | null;
  resolve(accepted: ReportAccepted[]): void;
  reject(error: unknown): void;
}

/**
 * While batches keep committing, the webhook dispatcher is nudged at most this often (each nudge is a fan-out
 * transaction of its own; its timer runs anyway): the first batch after a quiet spell nudges at once.
 */
export const EVENT_NUDGE_INTERVAL_MS = 20;

/** How long a report may wait for another process's write lock before it fails with 503 busy. */
export const BUSY_GIVE_UP_MS = 30_000;

/** Counts of what the group commit did, for tests, benchmarks and metrics. */
export interface BatchStats {
  batches: number;
  reports: number;
  largestBatch: number;
}

export class ReportService {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly scorer: AddressScorer;
  private readonly publisher: AddressChangePublisher;
  private readonly onEventQueued: () => void;
  private readonly maxBatch: number;
  private readonly ledger: CreditLedger;
  private readonly stmt;
  private readonly forwarded;
  /** The duplicate rule's window in ms; 0 when there is no rule. */
  readonly duplicateWindowMs: number;

  private queue: Queued[] = [];
  private flushScheduled = false;
  /** Set while a batch waits for another process's write lock; submit() then only queues. */
  private busyRetry: ReturnType<typeof setTimeout> | null = null;
  private busyDelayMs = 0;
  private readonly busyGiveUpMs: number;
  private lastNudgeAt = Number.NEGATIVE_INFINITY;
  private nudgeLater: ReturnType<typeof setTimeout> | null = null;
  readonly stats: BatchStats = { batches: 0, reports: 0, largestBatch: 0 };

  constructor(deps: ReportServiceDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.scorer = deps.scorer;
    this.publisher = deps.changes;
    this.onEventQueued = deps.onEventQueued ?? (() => {});
    this.maxBatch = deps.maxBatch ?? DEFAULT_MAX_BATCH;
    this.busyGiveUpMs = deps.busyGiveUpMs ?? BUSY_GIVE_UP_MS;
    this.ledger = new CreditLedger(deps.store);
    this.stmt = reportIntakeStatements(deps.store.sqlite);
    this.forwarded = forwardedReportStatements(deps.store.sqlite);
    this.duplicateWindowMs = deps.duplicateWindowMs ?? DUPLICATE_WINDOW_MS;
  }


  /**
   * Queues a report by user `reporterId` and resolves once it is committed, with what the 201 answer shows.
   * Rejects with AppError duplicate_report (429, Retry-After) when the reporter reported the address less than 15
   * minutes ago (by the injected clock), earlier reports of the same batch included.
   */
  submit(reporterId: number, input: ReportInput, options: SubmitOptions = {}): Promise<ReportAccepted> {
    return new Promise<ReportAccepted>((resolve, reject) => this.enqueue(reporterId, [input], options, (accepted) => resolve(accepted[0]), reject));
  }

  /**
   * Several reports by one reporter about ONE address, as one submission (an AbuseIPDB report listing several
   * categories): refused whole as a duplicate, or all written in the same transaction.
   */
  submitAll(reporterId: number, inputs: readonly ReportInput[], options: SubmitOptions = {}): Promise<ReportAccepted[]> {
    if (inputs.length === 0 || inputs.some((i) => i.ip.text !== inputs[0].ip.text)) throw new Error("submitAll takes one or more reports about one address");
    return new Promise<ReportAccepted[]>((resolve, reject) => this.enqueue(reporterId, inputs, options, resolve, reject));
  }

  private enqueue(reporterId: number, inputs: readonly ReportInput[], options: SubmitOptions, resolve: (a: ReportAccepted[]) => void, reject: (e: unknown) => void): void {
    const nowMs = Math.trunc(this.clock.now());
    const atMs = options.atMs === undefined ? nowMs : Math.min(Math.trunc(options.atMs), nowMs);
    if (options.forwardIds !== undefined && options.forwardIds.length !== inputs.length) throw new Error("one forward id per report");
    this.queue.push({ reporterId, inputs, source: options.source ?? "api", atMs, nowMs, forwardIds: options.forwardIds, busySince: null, resolve, reject });
    if (this.busyRetry !== null) return;
    if (this.queue.length >= this.maxBatch) {
      this.flush();
    } else if (!this.flushScheduled) {
      this.scheduleFlush();
    }
  }

  /**
   * Flushes once the event loop has drained the sockets: at the first pass of the loop that brought no report,
   * and at the latest GATHER_MAX_MS after the first report queued. Waiting for the reports the sockets still
   * hold makes one commit (one fsync) serve them all, instead of two commits taking turns.
   */
  private scheduleFlush(): void {
    this.flushScheduled = true;
    const firstAt = performance.now();
    let queued = this.queue.length;
    const pass = () => {
      if (this.queue.length > queued && this.queue.length < this.maxBatch && performance.now() - firstAt < GATHER_MAX_MS) {
        queued = this.queue.length;
        setImmediate(pass);
        return;
      }
      this.flushScheduled = false;
      this.flush();
    };
    setImmediate(pass);
  }

  /**
   * Writes everything queued now, in one transaction, and settles its promises. Safe to call at any time. When
   * another process holds the write lock (a CLI import), the batch goes back to the queue at once (no busy wait)
   * and is tried again after a growing pause, the event loop free meanwhile; after BUSY_GIVE_UP_MS its reports
   * fail with 503 busy. `final` (at stop) tries once, waiting the connection's busy timeout, and fails what cannot
   * be written.
   */
  flush(final = false): void {
    if (this.busyRetry !== null) {
      clearTimeout(this.busyRetry);
      this.busyRetry = null;
    }
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    let outcomes: BatchOutcomes;
    try {
      outcomes = this.commit(batch, final);
    } catch (error) {
      // The commit itself failed: nothing of the batch is stored.
      if (!final && isBusyError(error)) {
        const now = performance.now();
        const waiting: Queued[] = [];
        for (const q of batch) {
          if ((q.busySince ??= now) > now - this.busyGiveUpMs) waiting.push(q);
          else q.reject(busyError());
        }
        this.queue = [...waiting, ...this.queue];
        this.busyDelayMs = Math.min(1000, Math.max(25, this.busyDelayMs * 2));
        this.busyRetry = setTimeout(() => {
          this.busyRetry = null;
          this.flush();
        }, this.busyDelayMs);
        return;
      }
      for (const q of batch) q.reject(storageError(error) ?? error);
      return;
    }
    const { results, ok, changes } = outcomes;
    this.busyDelayMs = 0;
    this.stats.batches++;
    this.stats.reports += batch.length;
    if (batch.length > this.stats.largestBatch) this.stats.largestBatch = batch.length;
    try {
      this.publisher.publish(changes);
      if (ok.includes(true)) this.eventsQueued();
    } catch (error) {
      // The batch is committed: its callers must hear so whatever went wrong after the commit.
      console.error("after committing reports:", error);
    }
    for (let i = 0; i < batch.length; i++) {
      if (ok[i]) batch[i].resolve(results[i] as ReportAccepted[]);
      else batch[i].reject(results[i]);
    }
  }

  /** Nudges the dispatcher now, or at the end of the nudge interval when it was nudged less than that ago. */
  private eventsQueued(): void {
    const sinceLast = performance.now() - this.lastNudgeAt;
    if (sinceLast >= EVENT_NUDGE_INTERVAL_MS) {
      this.lastNudgeAt = performance.now();
      this.onEventQueued();
    } else if (this.nudgeLater === null) {
      this.nudgeLater = setTimeout(() => {
        this.nudgeLater = null;
        this.lastNudgeAt = performance.now();
        this.onEventQueued();
      }, EVENT_NUDGE_INTERVAL_MS - sinceLast);
      (this.nudgeLater as { unref?: () => void }).unref?.();
    }
  }

  /**
   * Writes the batch in one transaction. Reports are written without savepoints (a duplicate is refused before
   * anything is written); if one fails halfway, the transaction is rolled back and the batch written again with
   * a savepoint around each report, so only that report fails. The transaction does not wait for another
   * process's write lock (the backoff in flush() does, with the event loop free), except at stop (`final`).
   */
  private commit(batch: readonly Queued[], final: boolean): BatchOutcomes {
    const transaction = final ? inTransaction : inTransactionIfUnlocked;
    try {
      return transaction(this.store, () => this.writeBatch(batch, false));
    } catch (error) {
      if (!(error instanceof ReportWriteFailed)) throw error;
      return transaction(this.store, () => this.writeBatch(batch, true));
    }
  }

  /** The batch's reports, then each reporter's credit totals, each address rescored and each report's event. */
  private writeBatch(batch: readonly Queued[], careful: boolean): BatchOutcomes {
    const results: (ReportAccepted[] | unknown)[] = new Array(batch.length);
    const ok: boolean[] = new Array(batch.length).fill(false);
    const written: Written[] = [];
    const totals = this.ledger.totalsOfRows();
    // The duplicate rule: each reporter's last report of the address, stored or earlier in this batch.
    let cutoff = Number.POSITIVE_INFINITY;
    for (const q of batch) cutoff = Math.min(cutoff, q.atMs - this.duplicateWindowMs);
    const stored = this.stmt.lastReportsAt.all(JSON.stringify(batch.map((q) => [q.reporterId, q.inputs[0]!.ip.text])), cutoff);
    const inBatch = new Map<string, number>();
    for (let i = 0; i < batch.length; i++) {
      const q = batch[i]!;
      const key = `${q.reporterId} ${q.inputs[0]!.ip.text}`;
      try {
        const earlier = inBatch.get(key) ?? Number.NEGATIVE_INFINITY;
        const ws = this.write(q, Math.max(stored[i]!.last ?? Number.NEGATIVE_INFINITY, earlier), careful);
        inBatch.set(key, Math.max(earlier, q.atMs));
        for (const w of ws) {
          written.push(w);
          w.balance = totals.add(q.reporterId, CREDITS_FOR_ACCEPTED_REPORT, q.nowMs, { accepted: 1 });
        }
        results[i] = ws.map((w) => w.accepted);
        ok[i] = true;
      } catch (error) {
        if (error instanceof ReportWriteFailed) throw error;
        results[i] = error;
        // A refusal of a forwarded report is its result too: the same batch sent again gets it again.
        if (q.forwardIds !== undefined && error instanceof AppError && error.errorCode === "duplicate_report") {
          for (const id of q.forwardIds) this.recordForwarded(q, { id, status: "refused", code: error.errorCode, message: error.message });
        }
      }
    }
    totals.move();
    for (const w of written) w.accepted.creditBalance = w.balance.balance;
    const changes = new AddressChanges();
    this.rescoreAndAnnounce(written, changes);
    return { results, ok, changes };
  }

  /**
   * One submission inside the batch's transaction: its reports, their first transitions and ledger rows. Throws
   * without writing anything when it is refused (`last`: the reporter's last report of the address, or -∞).
   * Careless (`careful` false), a failure halfway throws ReportWriteFailed, for the whole batch to be written
   * again carefully: with a savepoint around each submission.
   */
  private write(q: Queued, last: number, careful: boolean): Written[] {
    const { inputs, atMs } = q;
    const ip = inputs[0].ip;
    if (q.forwardIds !== undefined) {
      const first = firstForwardedResults(this.forwarded, q.forwardIds);
      if (first.length > 0) throw new AlreadyForwarded(first);
    }
    const window = this.duplicateWindowMs;
    if (window > 0 && last > atMs - window) throw duplicateReport(ip, last + window - q.nowMs, window);
    if (!careful) {
      try {
        return this.writeAll(q);
      } catch (error) {
        throw new ReportWriteFailed(error);
      }
    }
    this.stmt.savepoint.run();
    try {
      const written = this.writeAll(q);
      this.stmt.release.run();
      return written;
    } catch (error) {
      this.stmt.rollbackTo.run();
      this.stmt.release.run();
      throw error;
    }
  }

  /** The submission's reports, and for forwarded ones their ids with the results. */
  private writeAll(q: Queued): Written[] {
    const written = q.inputs.map((input) => this.writeOne(q, input));
    if (q.forwardIds !== undefined) {
      for (let k = 0; k < written.length; k++) this.recordForwarded(q, { id: q.forwardIds[k]!, status: "accepted", reportId: written[k]!.accepted.reportId });
    }
    return written;
  }

  private recordForwarded(q: Queued, result: ForwardedResult): void {
    this.forwarded.record.run(result.id, q.reporterId, JSON.stringify(result), q.nowMs);
  }

  /** The report, its first transition and its ledger row (the credit totals move once per batch). */
  private writeOne(q: Queued, input: ReportInput): Written {
    const { reporterId, atMs } = q;
    const ip = input.ip;
    const reportId = Number(
      this.stmt.insertReport.run(ip.text, ip.version, reporterId, input.category, input.severity, input.description, input.evidence, q.source, atMs, atMs)
        .lastInsertRowid,
    );
    this.stmt.insertTransition.run(reportId, atMs, reporterId, q.source);
    this.ledger.recordRow(reporterId, CREDITS_FOR_ACCEPTED_REPORT, "report_accepted", reportId, q.nowMs);
    return {
      ip,
      reporterId,
      reportId,
      category: input.category,
      atMs,
      nowMs: q.nowMs,
      balance: NO_BALANCE,
      accepted: {
        reportId: String(reportId),
        ipAddress: ip.text,
        category: input.category,
        severity: input.severity,
        status: "pending",
        createdAt: isoTime(atMs),
        creditsEarned: CREDITS_FOR_ACCEPTED_REPORT,
        creditBalance: Number.NaN,
      },
    };
  }

  /**
   * Rescores each address of the batch once (a busy address can hold thousands of counting reports, and a
   * flood of reports about it arrives in the same batches), then writes each report's `ip.reported` event with
   * the address's confidence after the batch.
   */
  private rescoreAndAnnounce(written: readonly Written[], changes: AddressChanges): void {
    const latest = new Map<string, Written>();
    for (const w of written) {
      const seen = latest.get(w.ip.text);
      if (seen === undefined || w.nowMs > seen.nowMs) latest.set(w.ip.text, w);
    }
    const addresses = [...latest.values()].map((w) => ({ ip: w.ip, nowMs: w.nowMs }));
    const records = this.scorer.rescoreAll(addresses);
    const confidence = new Map<string, number>();
    for (let i = 0; i < addresses.length; i++) {
      const { ip } = addresses[i]!;
      const record = records[i]!;
      changes.set(ip, record);
      confidence.set(ip.text, abuseConfidence(record?.reputationScore ?? 100));
    }
    for (const w of written) {
      enqueueEvent(
        this.store,
        "ip.reported",
        { ip: w.ip.text, category: w.category, confidence: confidence.get(w.ip.text)!, reporterId: w.reporterId, reportId: w.reportId },
        w.atMs,
      );
    }
  }
}

/** A report written in the current batch, waiting for its address's rescore and its event. */
interface Written {
  ip: Ip;
  reporterId: number;
  reportId: number;
  category: Category;
  atMs: number;
  /** Its arrival (the time its address is scored at). */
  nowMs: number;
  /** The reporter's balance right after this report's credit, once the batch's totals have moved. */
  balance: BalanceAfterRow;
  accepted: ReportAccepted;
}

const NO_BALANCE: BalanceAfterRow = { balance: Number.NaN };

/** What a batch's transaction decided: per submission its answers or its error. */
interface BatchOutcomes {
  results: (ReportAccepted[] | unknown)[];
  ok: boolean[];
  changes: AddressChanges;
}

/** A report failed after some of its writes, outside a savepoint: the batch must be written again carefully. */
class ReportWriteFailed extends Error {
  constructor(readonly failure: unknown) {
    super("a report failed halfway through its writes");
  }
}

/** A forwarded submission whose ids were stored before: its first results, given again. */
export class AlreadyForwarded extends Error {
  constructor(readonly results: readonly ForwardedResult[]) {
    super("forwarded before");
  }
}

/** How a duplicate window reads in a message: "15 minutes", "90 seconds". */
export function windowText(windowMs: number): string {
  return windowMs % 60_000 === 0 ? `${windowMs / 60_000} minute${windowMs === 60_000 ? "" : "s"}` : `${Math.round(windowMs / 1000)} seconds`;
}

/** 429 duplicate_report with Retry-After: whole seconds until the window has passed (at least 1). */
export function duplicateReport(ip: Ip, remainingMs: number, windowMs = DUPLICATE_WINDOW_MS): AppError {
  const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
  return new AppError(
    "duplicate_report",
    `You reported ${ip.text} less than ${windowText(windowMs)} ago; the same address can be reported again in ${seconds} s`,
    { headers: { "retry-after": String(seconds) } },
  );
}
