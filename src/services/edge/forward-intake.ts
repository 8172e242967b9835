// An edge's report intake (contract 18): validated reports are queued durably in the edge's own file and
// acknowledged after that commit; the forwarder hands them to the primary later. Reports arriving together are
// written in one transaction (one fsync for all, as the primary's group commit does). The duplicate rule applies
// per client key over what this edge accepted within the window, forwarded or not; the queue's bound refuses a
// request that does not fit whole (503 busy), never dropping what is queued.

import { randomUUID } from "node:crypto";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import type { ForwardedSource } from "../../domain/forwarded-report";
import type { ReportInput } from "../../domain/report-input";
import type { ForwardQueueFile, NewQueuedReport } from "../../store/forward-queue";
import { duplicateReport } from "../reports/intake";

/** What a full queue's 503 asks a client to wait. */
export const QUEUE_FULL_RETRY_SECONDS = 30;
/** The duplicate rule's memory is pruned this often. */
const PRUNE_EVERY_MS = 60_000;

/** One request's reports (an AbuseIPDB report with several categories gives several), about one address. */
export interface EdgeSubmission {
  inputs: readonly ReportInput[];
  /** Its own time (an AbuseIPDB timestamp, checked), else null: dated when accepted. */
  atMs: number | null;
  source: ForwardedSource;
}

export interface EdgeIntakeDeps {
  queue: ForwardQueueFile;
  clock: Clock;
  duplicateWindowMs: number;
  queueMax: number;
  /** Called after a commit queued reports (the forwarder is nudged). */
  onQueued?: () => void;
}

interface Pending {
  rows: NewQueuedReport[];
  resolve(): void;
  reject(error: unknown): void;
  /** The duplicate rule's entries this set, with what they held before (restored if the commit fails). */
  undo: [string, number | undefined][];
}

export class EdgeIntake {
  private readonly lastAccepted = new Map<string, number>();
  private pending: Pending[] = [];
  private pendingReports = 0;
  private flushScheduled = false;
  private queued: number;
  private lastPruneAt: number;

  constructor(private readonly deps: EdgeIntakeDeps) {
    this.queued = deps.queue.count();
    const now = deps.clock.now();
    this.lastPruneAt = now;
    if (deps.duplicateWindowMs > 0) {
      for (const r of deps.queue.acceptedSince(now - deps.duplicateWindowMs)) this.lastAccepted.set(keyOf(r.client, r.ip), r.at);
    }
  }

  /** Reports waiting to be forwarded (written or being written). */
  get queuedCount(): number {
    return this.queued + this.pendingReports;
  }

  /** The forwarder took `n` off the queue. */
  forwarded(n: number): void {
    this.queued = Math.max(0, this.queued - n);
  }

  /** Whole seconds until `client` may report `ip` again, or null when it may now. */
  duplicateWait(client: string, ip: string): number | null {
    const window = this.deps.duplicateWindowMs;
    if (window <= 0) return null;
    const last = this.lastAccepted.get(keyOf(client, ip));
    const remaining = last === undefined ? 0 : last + window - this.deps.clock.now();
    return remaining > 0 ? remaining : null;
  }

  /**
   * Queues each submission of `client` (all, or none when the queue cannot take them all: 503 busy) and resolves
   * with their reports' ids once they are durable. A duplicate (by the duplicate rule) is refused with 429
   * before anything is queued; callers that take several (bulk) leave duplicates out first with duplicateWait.
   */
  accept(client: string, submissions: readonly EdgeSubmission[]): Promise<string[][]> {
    const count = submissions.reduce((n, s) => n + s.inputs.length, 0);
    if (this.queuedCount + count > this.deps.queueMax) {
      return Promise.reject(
        new AppError("busy", `This edge's forward queue is full (${this.deps.queueMax} reports waiting for the primary); nothing was queued`, {
          headers: { "retry-after": String(QUEUE_FULL_RETRY_SECONDS) },
        }),
      );
    }
    for (const s of submissions) {
      const wait = this.duplicateWait(client, s.inputs[0]!.ip.text);
      if (wait !== null) return Promise.reject(duplicateReport(s.inputs[0]!.ip, wait, this.deps.duplicateWindowMs));
    }
    const now = Math.trunc(this.deps.clock.now());
    const rows: NewQueuedReport[] = [];
    const ids: string[][] = [];
    const undo: [string, number | undefined][] = [];
    for (const s of submissions) {
      const group = randomUUID();
      const ip = s.inputs[0]!.ip.text;
      const key = keyOf(client, ip);
      undo.push([key, this.lastAccepted.get(key)]);
      if (this.deps.duplicateWindowMs > 0) this.lastAccepted.set(key, now);
      const groupIds: string[] = [];
      for (const input of s.inputs) {
        const id = randomUUID();
        groupIds.push(id);
        rows.push({
          id,
          group,
          client,
          ip,
          at: s.atMs ?? now,
          ownTime: s.atMs !== null,
          source: s.source,
          report: JSON.stringify({ ip, category: input.category, severity: input.severity, description: input.description, evidence: input.evidence }),
          acceptedAt: now,
        });
      }
      ids.push(groupIds);
    }
    this.pendingReports += rows.length;
    return new Promise<string[][]>((resolve, reject) => {
      this.pending.push({ rows, undo, resolve: () => resolve(ids), reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Writes everything waiting in one transaction and settles its promises. */
  flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const rows = batch.flatMap((p) => p.rows);
    this.pendingReports -= rows.length;
    try {
      this.deps.queue.append(rows);
    } catch (error) {
      for (const p of batch) {
        for (const [key, before] of p.undo.reverse()) {
          if (before === undefined) this.lastAccepted.delete(key);
          else this.lastAccepted.set(key, before);
        }
        p.reject(new AppError("busy", `The edge could not queue the report: ${(error as Error).message}`, { headers: { "retry-after": "5" } }));
      }
      return;
    }
    this.queued += rows.length;
    for (const p of batch) p.resolve();
    this.deps.onQueued?.();
    this.prune();
  }

  /** Forgets acceptances older than the window, in memory and in the file, once a minute. */
  private prune(): void {
    const now = this.deps.clock.now();
    if (now - this.lastPruneAt < PRUNE_EVERY_MS) return;
    this.lastPruneAt = now;
    const cutoff = now - Math.max(this.deps.duplicateWindowMs, 0);
    for (const [key, at] of this.lastAccepted) if (at <= cutoff) this.lastAccepted.delete(key);
    try {
      this.deps.queue.pruneAccepted(cutoff);
    } catch {
      // Tried again at the next prune; the rule reads memory.
    }
  }
}

const keyOf = (client: string, ip: string) => `${client} ${ip}`;
