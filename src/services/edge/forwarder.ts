// An edge's forwarder (contract 18): takes the oldest queued reports, at most MAX_FORWARD_BATCH, whole requests
// only, and POSTs them to the primary's /v1/reports/forwarded with the forward key; removes each once the primary
// answered for it (accepted, or refused: recorded with its reason, never sent again). Any other answer (the
// primary unreachable, 5xx, 401, 403, 429, a malformed answer) leaves the batch queued and tries again after a
// growing wait (at most 30 s). One batch is in flight at a time, so reports arrive in order. The same ids go again
// after a lost answer, and the primary stores an id once: every acknowledged report arrives exactly once.
// It is the same kind of worker as the webhook dispatcher: work in a table, passes on a PassTimer, nudged by the
// producer after each commit.

import type { Clock } from "../../domain/clock";
import { forwardRetryDelay } from "../../domain/forward-backoff";
import { type ForwardedReportWire, MAX_FORWARD_BATCH } from "../../domain/forwarded-report";
import type { ForwardedResult } from "../../store/forwarded-reports";
import type { ForwardQueueFile, QueuedReportRow, RefusedReport } from "../../store/forward-queue";
import { PassTimer } from "../outbox/pass-timer";
import { VERSION } from "../../version";

/** The primary's route. */
export const FORWARD_PATH = "/v1/reports/forwarded";
/** How often the timer looks for queued reports (a commit nudges at once besides). */
const PASS_INTERVAL_MS = 1_000;
/** One attempt's limit. */
const ATTEMPT_TIMEOUT_MS = 60_000;
/** A batch's body stays under this many bytes of reports (the primary takes 32 MiB). */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

export interface ForwarderDeps {
  queue: ForwardQueueFile;
  /** The primary's base URL. */
  url: string;
  key: string;
  clock: Clock;
  /** Told how many reports left the queue (accepted or refused). */
  onSettled?: (n: number) => void;
  log?: (line: string) => void;
}

/** What /readyz and /metrics show of the forwarder. */
export interface ForwardStatus {
  lastForwardError: string | null;
  forwardedTotal: number;
  refusedTotal: number;
}

export class Forwarder {
  private readonly passes: PassTimer;
  private inFlight: Promise<void> | null = null;
  private readonly abandon = new AbortController();
  private failures = 0;
  private retryAt = 0;
  readonly status: ForwardStatus = { lastForwardError: null, forwardedTotal: 0, refusedTotal: 0 };

  constructor(private readonly deps: ForwarderDeps) {
    this.passes = new PassTimer(() => this.pump(), PASS_INTERVAL_MS);
  }

  start(): void {
    this.passes.start();
  }

  /** A commit queued reports: a pass soon, unless the primary is being waited for. */
  nudge(): void {
    this.passes.nudge();
  }

  /** Stops passing; an attempt under way is abandoned (its reports stay queued and go again after a restart). */
  async stop(): Promise<void> {
    this.passes.stop();
    this.abandon.abort();
    await this.inFlight;
  }

  /** Forwards until the queue is empty or an attempt fails (for tests and benchmarks that drive it). */
  async drain(): Promise<void> {
    for (;;) {
      await this.inFlight;
      const before = this.failures;
      const sent = await this.forwardOnce();
      if (!sent || this.failures > before) return;
    }
  }

  private pump(): void {
    if (this.inFlight !== null || performance.now() < this.retryAt) return;
    void this.forwardOnce();
  }

  /** One batch: false when there was nothing to send (or one was already under way). */
  private forwardOnce(): Promise<boolean> {
    if (this.inFlight !== null || this.passes.isStopped) return Promise.resolve(false);
    let rows: QueuedReportRow[];
    try {
      rows = wholeGroups(this.deps.queue.oldest(MAX_FORWARD_BATCH + 1));
    } catch (error) {
      this.failed(`reading the queue: ${(error as Error).message}`);
      return Promise.resolve(false);
    }
    if (rows.length === 0) return Promise.resolve(false);
    const attempt = this.send(rows).finally(() => {
      this.inFlight = null;
    });
    this.inFlight = attempt;
    return attempt.then(() => {
      // More may be waiting: go on at once while the primary answers.
      if (this.failures === 0) this.nudge();
      return true;
    });
  }

  private async send(rows: QueuedReportRow[]): Promise<void> {
    const reports: ForwardedReportWire[] = rows.map((r) => ({
      id: r.id,
      group: r.group_id,
      at: r.at,
      ownTime: r.own_time === 1,
      source: r.source as ForwardedReportWire["source"],
      report: JSON.parse(r.report) as ForwardedReportWire["report"],
    }));
    let results: ForwardedResult[];
    try {
      const response = await fetch(`${this.deps.url}${FORWARD_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": this.deps.key, "user-agent": `abuse-intel-edge/${VERSION}` },
        body: JSON.stringify({ reports }),
        signal: AbortSignal.any([AbortSignal.timeout(ATTEMPT_TIMEOUT_MS), this.abandon.signal]),
      });
      const text = await response.text();
      if (response.status < 200 || response.status > 299) {
        this.failed(`the primary answered HTTP ${response.status}: ${text.slice(0, 200)}`);
        return;
      }
      results = (JSON.parse(text) as { data: { results: ForwardedResult[] } }).data.results;
      if (!Array.isArray(results)) throw new Error("no results in the answer");
    } catch (error) {
      if (this.abandon.signal.aborted) return;
      this.failed(`the primary could not be reached: ${describe(error)}`);
      return;
    }
    const byId = new Map(results.map((r) => [r.id, r]));
    const done: string[] = [];
    const refused: RefusedReport[] = [];
    const now = this.deps.clock.now();
    let accepted = 0;
    for (const report of reports) {
      const result = byId.get(report.id);
      if (result === undefined) continue; // not answered for: stays queued, goes again
      done.push(report.id);
      if (result.status === "accepted") accepted++;
      else refused.push({ id: report.id, ip: report.report.ip, code: result.code ?? "refused", message: result.message ?? "", refusedAt: now });
    }
    try {
      this.deps.queue.settle(done, refused);
    } catch (error) {
      // Sent again later: the primary answers the same for the same ids.
      this.failed(`recording what the primary answered: ${(error as Error).message}`);
      return;
    }
    this.status.forwardedTotal += accepted;
    this.status.refusedTotal += refused.length;
    for (const r of refused) this.deps.log?.(`edge: the primary refused report ${r.id} about ${r.ip} (${r.code}): ${r.message}`);
    this.deps.onSettled?.(done.length);
    this.failures = 0;
    this.retryAt = 0;
    this.status.lastForwardError = null;
  }

  private failed(error: string): void {
    this.failures++;
    this.retryAt = performance.now() + forwardRetryDelay(this.failures);
    if (this.status.lastForwardError !== error) this.deps.log?.(`edge: forwarding reports: ${error}`);
    this.status.lastForwardError = error;
  }
}

/**
 * The batch to send: the oldest rows up to MAX_FORWARD_BATCH and MAX_BATCH_BYTES, ending at a request's end (the
 * reports of one request go together). `rows` holds one more than a batch, to see whether the last group is whole.
 */
function wholeGroups(rows: QueuedReportRow[]): QueuedReportRow[] {
  let end = Math.min(rows.length, MAX_FORWARD_BATCH);
  let bytes = 0;
  for (let i = 0; i < end; i++) {
    bytes += rows[i]!.report.length + 200;
    if (bytes > MAX_BATCH_BYTES && i > 0) {
      end = i;
      break;
    }
  }
  if (end < rows.length) {
    const cut = rows[end]!.group_id;
    let start = end;
    while (start > 0 && rows[start - 1]!.group_id === cut) start--;
    // A group cut at the batch's end waits for the next batch, unless it is the only one.
    if (start > 0) end = start;
  }
  return rows.slice(0, end);
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" && code !== "" && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
