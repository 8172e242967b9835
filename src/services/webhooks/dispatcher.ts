// Delivers webhook events (contract section 7): fans outbox rows out into one delivery per matching
// subscription, POSTs due deliveries with bounded concurrency, records every attempt, and reschedules failures
// on the retry schedule. Everything lives in the store, so a restart resumes with the same delivery ids.
//
// It never slows the API: requests run asynchronously, at most `maxInFlight` at once (and `maxInFlightPerWebhook`
// per subscription, shared out so that hung receivers cannot starve the others: delivery-slots.ts), each bounded
// by `timeoutMs`; attempt results are written in small batched transactions, and no write waits for another
// process's write lock (a CLI import holds it for seconds, and bun:sqlite would wait on the event loop): it is
// tried again at the next pass.

import { DeliveryTables, type DueDelivery } from "../../store/webhook-deliveries";
import { DeliverySlots } from "./delivery-slots";
import { PassTimer } from "../outbox/pass-timer";
import { failingMarkWriters, failingWebhooks } from "../../store/webhook-failing";
import { randomUUID } from "node:crypto";
import type { Clock } from "../../domain/clock";
import { isoTime } from "../../domain/clock";
import { buildBody, type EventKind, isSuccessStatus, retryDelayAfter, signBody } from "../../domain/webhook-payload";
import { inTransaction, inTransactionIfUnlocked, isBusyError, type Store, unlessLocked } from "../../store/database";
import { VERSION } from "../../version";

export interface DispatcherOptions {
  /** Per-attempt timeout (contract: 5 s). */
  timeoutMs: number;
  /** How often the background timer looks for work, in real milliseconds. */
  intervalMs: number;
  maxInFlight: number;
  maxInFlightPerWebhook: number;
  /** Outbox rows fanned out per transaction at most. */
  fanOutBatch: number;
  /**
   * Deliveries made per transaction at most (the first event is always taken, however many it makes): a pass
   * holds the event loop for about this many inserts however many subscriptions receive each event.
   */
  fanOutDeliveries: number;
  /** Delivered and failed deliveries (with their attempts) are pruned this long after their last change. */
  retentionMs: number;
  /** Where unexpected failures of the dispatcher itself are reported (never per-attempt noise). */
  log: (message: string) => void;
}

export const DEFAULT_DISPATCHER_OPTIONS: DispatcherOptions = Object.freeze({
  timeoutMs: 5_000,
  intervalMs: 250,
  maxInFlight: 8,
  maxInFlightPerWebhook: 4,
  fanOutBatch: 500,
  fanOutDeliveries: 2_000,
  retentionMs: 30 * 86_400_000,
  log: (message: string) => console.error(`webhook dispatcher: ${message}`),
});

/** What a tick did (for tests and the jobs view). */
export interface DispatchSummary {
  /** Outbox rows fanned out. */
  events: number;
  /** Deliveries created from them. */
  deliveriesCreated: number;
  attempts: number;
  delivered: number;
  /** Attempts that failed and were rescheduled. */
  retried: number;
  /** Deliveries that failed for good. */
  failed: number;
}

interface AttemptOutcome {
  due: DueDelivery;
  attemptedAt: number;
  finishedAt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** Whether this attempt changed whether its subscription is failing (written with it). */
  failingChanged?: boolean;
}

interface InFlight {
  webhookId: number;
  /** Settles once the attempt's outcome is written (or held: see below), or the attempt was abandoned by stop(). */
  done: Promise<void>;
  settle: () => void;
  /** Finished, its outcome not written yet (the store was locked): the slot stays taken, `done` is settled. */
  held?: boolean;
}

const PRUNE_EVERY_MS = 3_600_000;
const PRUNE_BATCH = 5_000;
const MAX_ERROR_CHARS = 500;
/** After the store refused to record outcomes, wait this long (real time) before sending more. */
const RECORD_FAILURE_PAUSE_MS = 5_000;

export class WebhookDispatcher {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly options: DispatcherOptions;
  private readonly inFlight = new Map<number, InFlight>();
  private readonly slots: DeliverySlots;
  private readonly outcomes: AttemptOutcome[] = [];
  private readonly abandon = new AbortController();
  private readonly counters: DispatchSummary = { events: 0, deliveriesCreated: 0, attempts: 0, delivered: 0, retried: 0, failed: 0 };
  private readonly passes: PassTimer;
  private flushScheduled = false;
  private stopped = false;
  private pausedUntil = 0;
  private lastPruneAt = Number.NEGATIVE_INFINITY;

  private readonly tables: DeliveryTables;

  constructor(deps: { store: Store; clock: Clock }, options: Partial<DispatcherOptions> = {}) {
    this.store = deps.store;
    this.tables = new DeliveryTables(deps.store);
    this.clock = deps.clock;
    this.options = { ...DEFAULT_DISPATCHER_OPTIONS, ...options };
    this.slots = new DeliverySlots(this.options);
    this.passes = new PassTimer(() => this.pump(), this.options.intervalMs);
    // What the last process knew: a hung receiver is capped from the first attempt after a restart.
    for (const id of failingWebhooks(deps.store)) this.slots.finished(id, false);
  }

  /** Starts the background timer (the server does; CLI commands and tests that drive tick() do not). */
  start(): void {
    if (this.stopped) return;
    this.passes.start();
  }

  get running(): boolean {
    return this.passes.running;
  }

  /** How many attempts are under way right now. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * Asks for a pass as soon as the current work yields: producers call it after committing an event so it
   * goes out without waiting for the timer. Does nothing unless the timer runs.
   */
  nudge(): void {
    this.passes.nudge();
  }

  /**
   * One whole pass, for tests and manual runs: fans out every waiting event (none while another process holds
   * the write lock), sends every due delivery, and resolves when nothing is in flight any more, with what this
   * pass saw happen.
   */
  async tick(): Promise<DispatchSummary> {
    if (this.stopped) return { events: 0, deliveriesCreated: 0, attempts: 0, delivered: 0, retried: 0, failed: 0 };
    const before = { ...this.counters };
    while (this.fanOut() > 0) {
      // Each call commits one batch; loop until the outbox has nothing waiting.
    }
    this.launch();
    const underWay = () => [...this.inFlight.values()].filter((f) => !f.held);
    while (underWay().length > 0) {
      await Promise.all(underWay().map((f) => f.done));
      this.launch();
    }
    const after = this.counters;
    return {
      events: after.events - before.events,
      deliveriesCreated: after.deliveriesCreated - before.deliveriesCreated,
      attempts: after.attempts - before.attempts,
      delivered: after.delivered - before.delivered,
      retried: after.retried - before.retried,
      failed: after.failed - before.failed,
    };
  }

  /**
   * Stops the timer and abandons attempts under way without recording them: they stay pending and go out again
   * (same delivery id) after the next start. Outcomes already received are still written. Safe to call twice.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.passes.stop();
    this.abandon.abort();
    await Promise.all([...this.inFlight.values()].map((f) => f.done));
    // Attempts not written yet (the store was locked) are written now, waiting for the lock the busy timeout.
    this.flush(true);
  }

  /**
   * Turns up to one batch of outbox rows into deliveries, in one transaction, and returns how many rows it
   * handled. Each subscription that is active and subscribed to the kind when the row is fanned out gets one
   * delivery with its own id (the body's timestamp may be older: an imported report keeps its date); an event
   * with a webhook id (a ping) goes to that subscription only. Rows nobody receives are deleted. Returns 0 when
   * another process holds the write lock: the next pass tries again.
   */
  fanOut(): number {
    return this.fanOutPass().events;
  }

  /** One fan-out: the events it handled, and whether more may be waiting (its budget spent, or a full batch read). */
  private fanOutPass(): { events: number; more: boolean } {
    // A plain read first: the timer calls this four times a second and must not take the write lock for nothing.
    if (!this.tables.hasUnfannedEvents()) return { events: 0, more: false };
    const now = this.clock.now();
    const result = this.writeUnlessLocked(() => {
      const rows = this.tables.unfannedEvents(this.options.fanOutBatch);
      if (rows.length === 0) return { events: 0, deliveries: 0, more: false };
      const subscriptions = this.tables.receivingSubscriptions().map((s) => ({ id: s.id, events: new Set(JSON.parse(s.events) as string[]) }));
      const { insertDelivery: insert, markFannedOut, dropEvents } = this.tables.fanOutWriters();
      let deliveries = 0;
      let events = 0;
      // Under heavy ingest with no subscriber, every report's event is one of these: deleted together.
      const unreceived: number[] = [];
      for (const row of rows) {
        const targets =
          row.webhook_id !== null
            ? subscriptions.filter((s) => s.id === row.webhook_id)
            : subscriptions.filter((s) => s.events.has(row.event));
        // The budget counts the deliveries events make: the first event is always taken, however many.
        if (events > 0 && deliveries + targets.length > this.options.fanOutDeliveries) break;
        events++;
        if (targets.length === 0) {
          unreceived.push(row.id);
          continue;
        }
        const body = buildBody(row.event, row.created_at, row.data);
        for (const s of targets) insert.run(randomUUID(), row.id, s.id, row.event, body, now, now, now);
        markFannedOut.run(now, row.id);
        deliveries += targets.length;
      }
      if (unreceived.length > 0) dropEvents.run(JSON.stringify(unreceived));
      return { events, deliveries, more: events < rows.length || rows.length === this.options.fanOutBatch };
    });
    if (result === null) return { events: 0, more: false };
    this.counters.events += result.events;
    this.counters.deliveriesCreated += result.deliveries;
    return result;
  }

  /**
   * Deletes delivered and failed deliveries (with their attempts) last changed before `cutoffMs`, and the outbox
   * rows left without deliveries; at most one batch per call. Returns how many deliveries it removed, or null
   * when another process holds the write lock.
   */
  prune(cutoffMs: number): number | null {
    return this.writeUnlessLocked(() => this.tables.pruneFinished(cutoffMs, PRUNE_BATCH));
  }

  /** Runs `work` in a transaction now, or returns null without waiting when another process holds the write lock. */
  private writeUnlessLocked<T>(work: () => T): T | null {
    return unlessLocked(this.store, () => inTransaction(this.store, work));
  }

  /** The timer's pass: never throws, never waits for a receiver. */
  private pump(): void {
    if (this.stopped) return;
    try {
      const pass = this.fanOutPass();
      if (pass.events > 0 && pass.more) this.nudge();
      const now = this.clock.now();
      if (now - this.lastPruneAt >= PRUNE_EVERY_MS && this.prune(now - this.options.retentionMs) !== null) this.lastPruneAt = now;
      this.launch();
    } catch (error) {
      this.options.log(`pass failed: ${describe(error)}`);
    }
  }

  /**
   * Starts attempts for due deliveries until the slots are taken or nothing is due, in rounds of a growing share
   * (delivery-slots.ts): each subscription's oldest due deliveries first, the subscriptions with the fewest
   * attempts under way before the others.
   */
  private launch(): void {
    if (this.stopped || performance.now() < this.pausedUntil) return;
    for (let share = 1; share <= this.slots.largestShare; share++) {
      // Each query starts at least its first row (the closed subscriptions are left out of it), or ends the round.
      for (;;) {
        if (this.slots.free <= 0) return;
        const due = this.tables.due(this.clock.now(), [...this.inFlight.keys()], this.slots.closed(share), this.slots.free);
        let started = 0;
        for (const row of due) {
          if (!this.slots.mayTake(row.webhookId, share)) continue;
          this.begin(row);
          started++;
        }
        if (started === 0) break;
      }
      if (!this.slots.anyHolding(share)) return; // nobody was held back by this share: a larger one finds nothing more
    }
  }

  private begin(due: DueDelivery): void {
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    this.inFlight.set(due.rowId, { webhookId: due.webhookId, done, settle });
    this.slots.take(due.webhookId);
    this.counters.attempts++;
    void this.send(due).then((outcome) => {
      if (outcome === null) this.release(due.rowId);
      else {
        outcome.failingChanged = this.slots.finished(due.webhookId, outcome.error === null);
        this.outcomes.push(outcome);
        this.scheduleFlush();
      }
    });
  }

  /** One HTTP attempt; null when stop() abandoned it (nothing is recorded then). Never throws. */
  private async send(due: DueDelivery): Promise<AttemptOutcome | null> {
    const attemptedAt = this.clock.now();
    const started = performance.now();
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const response = await fetch(due.url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "User-Agent": `abuse-intel/${VERSION}`,
          "X-Webhook-Event": due.event,
          "X-Webhook-Delivery": due.deliveryId,
          "X-Webhook-Timestamp": isoTime(attemptedAt),
          "X-Webhook-Signature": signBody(due.secret, due.body),
        },
        body: due.body,
        redirect: "manual",
        signal: AbortSignal.any([timeout, this.abandon.signal]),
      });
      statusCode = response.status;
      // The receiver's answer is not needed: release the connection instead of reading it.
      response.body?.cancel().catch(() => {});
      if (!isSuccessStatus(statusCode)) error = `receiver answered HTTP ${statusCode}`;
    } catch (e) {
      if (this.abandon.signal.aborted) return null;
      error = timeout.aborted ? `timed out after ${this.options.timeoutMs} ms` : describe(e);
    }
    return {
      due,
      attemptedAt,
      finishedAt: this.clock.now(),
      statusCode,
      error: error === null ? null : error.slice(0, MAX_ERROR_CHARS),
      durationMs: Math.round(performance.now() - started),
    };
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /**
   * Writes every finished attempt in one transaction, then frees their slots and fills them again. Only the last
   * one (`final`, at stop) waits for another process's write lock, for the busy timeout.
   */
  private flush(final = false): void {
    const batch = this.outcomes.splice(0, this.outcomes.length);
    if (batch.length === 0) return;
    try {
      (final ? inTransaction : inTransactionIfUnlocked)(this.store, () => {
        const { updateDelivery: update, insertAttempt } = this.tables.attemptWriters();
        const marks = failingMarkWriters(this.store);
        // The state the subscriptions are in now (later outcomes may have changed it again since).
        for (const id of new Set(batch.filter((o) => o.failingChanged).map((o) => o.due.webhookId))) marks.set(id, this.slots.isFailing(id), batch[0]!.finishedAt);
        for (const o of batch) {
          const attempts = o.due.attempts + 1;
          const ok = o.error === null;
          const delay = ok ? null : retryDelayAfter(attempts);
          const status = ok ? "delivered" : delay === null ? "failed" : "pending";
          const next = delay === null ? o.finishedAt : o.finishedAt + delay;
          // The subscription may have been deleted meanwhile: then there is nothing to record.
          const changed = update.run(status, attempts, next, o.statusCode, o.error, o.finishedAt, o.due.rowId).changes;
          if (changed === 0) continue;
          insertAttempt.run(o.due.rowId, o.attemptedAt, o.statusCode, o.error, o.durationMs);
          if (status === "delivered") this.counters.delivered++;
          else if (status === "failed") this.counters.failed++;
          else this.counters.retried++;
        }
      });
    } catch (error) {
      // Kept with their slots and written again after a pause (another process's import holds the lock, say).
      // Released now, they would be sent again: a receiver that answered 2xx would get the delivery twice, and the
      // attempt it answered would never be recorded.
      this.outcomes.unshift(...batch);
      for (const o of batch) {
        const entry = this.inFlight.get(o.due.rowId);
        if (entry === undefined) continue;
        entry.held = true;
        entry.settle();
      }
      this.options.log(`could not record ${batch.length} attempts (trying again in ${RECORD_FAILURE_PAUSE_MS / 1000} s): ${describe(error)}`);
      this.pausedUntil = performance.now() + RECORD_FAILURE_PAUSE_MS;
      if (!this.stopped) setTimeout(() => this.scheduleFlush(), RECORD_FAILURE_PAUSE_MS).unref?.();
      return;
    }
    for (const o of batch) this.release(o.due.rowId);
    this.launch();
  }

  private release(rowId: number): void {
    const entry = this.inFlight.get(rowId);
    if (!entry) return;
    this.inFlight.delete(rowId);
    this.slots.give(entry.webhookId);
    entry.settle();
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" && code !== "" && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
