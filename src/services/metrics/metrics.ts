// What GET /metrics reports, in the Prometheus text format (0.0.4). Requests are counted as they are answered
// (by method, route template and status class, with a duration histogram) at the cost of a few array
// increments each; everything else is read from the services only when scraped.

import { type StoreReads, storeReads } from "../../store/metrics-reads";
import { type ErrorCode, STATUS_OF_CODE } from "../../domain/errors";
import { VERSION } from "../../version";
import type { Clock } from "../../domain/clock";
import type { ReputationIndex } from "../../index/reputation-index";
import type { Store } from "../../store/database";
import type { ReportService } from "../reports/intake";
import type { Scheduler } from "../scheduled-jobs";
import type { WebhookDispatcher } from "../webhooks/dispatcher";
import type { DnsCounters } from "./dns-counters";
import { holdEventLoopWatch, LAG_BUCKETS, LAG_WINDOW_SECONDS } from "./event-loop-lag";

/** What the exposition reads from an instance when scraped (every instance's Services has these). */
export interface MetricsSources {
  store: Store;
  clock: Clock;
  index: ReputationIndex;
  reports: Pick<ReportService, "stats">;
  webhookDispatcher: Pick<WebhookDispatcher, "inFlightCount">;
  scheduler?: Scheduler;
  /** An edge's forwarding of reports (contract 18), when it takes them. */
  forwarding?: ForwardingGauges;
}

/** What an edge's forwarder shows: reports waiting, accepted by the primary, refused by it. */
export interface ForwardingGauges {
  queued(): number;
  forwardedTotal(): number;
  refusedTotal(): number;
}

/** Histogram bounds in seconds: lookups answer in well under a millisecond, so the low end is fine-grained. */
export const DURATION_BUCKETS: readonly number[] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The route label of requests that matched no route: one series, whatever paths scanners try. */
export const UNMATCHED_ROUTE = "(unmatched)";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "OTHER"] as const;
const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;
const ERROR_CODES = Object.keys(STATUS_OF_CODE) as ErrorCode[];

function methodIndex(method: string): number {
  switch (method) {
    case "GET":
      return 0;
    case "POST":
      return 1;
    case "PUT":
      return 2;
    case "PATCH":
      return 3;
    case "DELETE":
      return 4;
    case "HEAD":
      return 5;
    case "OPTIONS":
      return 6;
    default:
      return 7; // any other method string must not create a series of its own
  }
}

/** The counts of one method on one route; created on the route's first request, then only incremented. */
export class RouteSeries {
  /** By status class: index 0 is 1xx … 4 is 5xx. */
  readonly statuses = new Float64Array(STATUS_CLASSES.length);
  /** Per bucket, not cumulative; the last slot is above the highest bound. */
  readonly buckets = new Float64Array(DURATION_BUCKETS.length + 1);
  sum = 0;
  count = 0;

  constructor(
    readonly method: string,
    readonly route: string,
  ) {}
}

/** The per-request counters. `record` runs once per request on the hot path: no allocation after warm-up. */
export class RequestCounters {
  private readonly routes = new Map<string, (RouteSeries | undefined)[]>();
  private readonly errors = new Float64Array(ERROR_CODES.length);
  private readonly errorIndex = new Map<string, number>(ERROR_CODES.map((code, i) => [code, i]));

  /** One answered request; `route` is the matched template (`/v1/ip/:ip`), undefined when none matched. */
  record(method: string, route: string | undefined, status: number, seconds: number): void {
    const key = route || UNMATCHED_ROUTE;
    let byMethod = this.routes.get(key);
    if (byMethod === undefined) {
      byMethod = new Array<RouteSeries | undefined>(METHODS.length).fill(undefined);
      this.routes.set(key, byMethod);
    }
    const m = methodIndex(method);
    let series = byMethod[m];
    if (series === undefined) byMethod[m] = series = new RouteSeries(METHODS[m], key);
    const statusClass = (status / 100) | 0;
    series.statuses[statusClass < 1 ? 0 : statusClass > 5 ? 4 : statusClass - 1]++;
    if (!(seconds >= 0)) seconds = 0; // a missing start time must not turn the sum into NaN for good
    let b = 0;
    while (b < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[b]) b++;
    series.buckets[b]++;
    series.sum += seconds;
    series.count++;
  }

  /** One error response, by the contract's code (section 1). */
  recordError(code: ErrorCode): void {
    const i = this.errorIndex.get(code);
    if (i !== undefined) this.errors[i]++;
  }

  errorCount(code: ErrorCode): number {
    return this.errors[this.errorIndex.get(code) ?? -1] ?? 0;
  }

  /** Every series, sorted by route then method, for rendering. */
  series(): RouteSeries[] {
    const all: RouteSeries[] = [];
    for (const byMethod of this.routes.values()) for (const s of byMethod) if (s !== undefined) all.push(s);
    return all.sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : methodIndex(a.method) - methodIndex(b.method)));
  }
}

type Labels = Record<string, string>;

/** Builds the text exposition: each family's HELP and TYPE once, then its samples. */
class Exposition {
  private readonly lines: string[] = [];

  family(name: string, type: "counter" | "gauge" | "histogram", help: string): this {
    this.lines.push(`# HELP ${name} ${help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n")}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, value: number, labels?: Labels): this {
    this.lines.push(`${name}${labelText(labels)} ${formatValue(value)}`);
    return this;
  }

  text(): string {
    return this.lines.join("\n") + "\n";
  }
}

function labelText(labels: Labels | undefined): string {
  if (labels === undefined) return "";
  const parts: string[] = [];
  for (const [name, value] of Object.entries(labels)) {
    parts.push(`${name}="${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`);
  }
  return `{${parts.join(",")}}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

export class Metrics {
  readonly requests = new RequestCounters();
  /** The DNS blocklist's counters when `serve --dns-port` answers DNS (kept by the listener across an edge's swaps). */
  dns: DnsCounters | null = null;
  private readonly startedAtMs: number;
  private reads: StoreReads | null | undefined;
  private readonly lagWatch = holdEventLoopWatch();

  constructor(private readonly services: MetricsSources) {
    this.startedAtMs = services.clock.now();
  }

  /** Leaves the event-loop watch (its timer stops with the process's last instance). */
  stop(): void {
    this.lagWatch.release();
  }

  /** The whole exposition. A source that fails (a read-only snapshot store lacks tables) leaves its families out. */
  render(): string {
    const out = new Exposition();
    out.family("abuse_intel_build_info", "gauge", "Always 1; the version as a label.").sample("abuse_intel_build_info", 1, { version: VERSION });
    this.renderRequests(out);
    this.attempt(() => this.renderStore(out));
    this.attempt(() => this.renderIndex(out));
    this.attempt(() => this.renderJobs(out));
    this.renderDns(out);
    this.attempt(() => this.renderForwarding(out));
    this.renderProcess(out);
    this.renderEventLoop(out);
    return out.text();
  }

  private attempt(render: () => void): void {
    try {
      render();
    } catch {
      // A scrape answers with what it could read; /readyz reports a broken store.
    }
  }

  private renderRequests(out: Exposition): void {
    const all = this.requests.series();
    out.family("abuse_intel_http_requests_total", "counter", "HTTP requests answered, by method, route template and status class.");
    for (const s of all) {
      for (let c = 0; c < STATUS_CLASSES.length; c++) {
        if (s.statuses[c] > 0) out.sample("abuse_intel_http_requests_total", s.statuses[c], { method: s.method, route: s.route, status: STATUS_CLASSES[c] });
      }
    }
    out.family(
      "abuse_intel_http_request_duration_seconds",
      "histogram",
      "Time from receiving a request to its response being ready (a streamed body may still be sending), by method and route template.",
    );
    for (const s of all) {
      const labels = { method: s.method, route: s.route };
      let cumulative = 0;
      for (let b = 0; b < DURATION_BUCKETS.length; b++) {
        cumulative += s.buckets[b];
        out.sample("abuse_intel_http_request_duration_seconds_bucket", cumulative, { ...labels, le: String(DURATION_BUCKETS[b]) });
      }
      out.sample("abuse_intel_http_request_duration_seconds_bucket", s.count, { ...labels, le: "+Inf" });
      out.sample("abuse_intel_http_request_duration_seconds_sum", s.sum, labels);
      out.sample("abuse_intel_http_request_duration_seconds_count", s.count, labels);
    }
    out.family("abuse_intel_http_errors_total", "counter", "Error responses by the contract's error code.");
    for (const code of ERROR_CODES) out.sample("abuse_intel_http_errors_total", this.requests.errorCount(code), { code });
    out
      .family("abuse_intel_rate_limited_total", "counter", "Responses refused with 429 rate_limited: a spent daily budget or a locked-out login.")
      .sample("abuse_intel_rate_limited_total", this.requests.errorCount("rate_limited"));
  }

  private renderStore(out: Exposition): void {
    this.reads ??= storeReads(this.services.store);
    const seq = this.reads.sequences();
    out
      .family("abuse_intel_reports_accepted_total", "counter", "Reports ever accepted into this data directory (API, imports and CLI alike).")
      .sample("abuse_intel_reports_accepted_total", seq.get("reports") ?? 0);
    const stats = this.services.reports.stats;
    out
      .family("abuse_intel_report_batches_total", "counter", "Group commits of reports written by this process.")
      .sample("abuse_intel_report_batches_total", stats.batches);
    out
      .family("abuse_intel_threats_detected_total", "counter", "Threat patterns ever detected (subnet bursts and category campaigns).")
      .sample("abuse_intel_threats_detected_total", seq.get("threats") ?? 0);
    const byStatus = new Map(this.reads.deliveriesByStatus().map((r) => [r.status, r.n]));
    out.family(
      "abuse_intel_webhook_deliveries",
      "gauge",
      "Webhook deliveries kept in the store, by outcome: pending (waiting or retrying), delivered, failed (retries used up). Finished ones are pruned after 30 days.",
    );
    for (const status of ["pending", "delivered", "failed"]) out.sample("abuse_intel_webhook_deliveries", byStatus.get(status) ?? 0, { status });
    out
      .family("abuse_intel_webhook_attempts_total", "counter", "Webhook delivery attempts ever made (each HTTP POST to a receiver).")
      .sample("abuse_intel_webhook_attempts_total", seq.get("delivery_attempts") ?? 0);
    out
      .family("abuse_intel_webhook_outbox_waiting", "gauge", "Events in the outbox not yet fanned out into deliveries.")
      .sample("abuse_intel_webhook_outbox_waiting", this.reads.outboxWaiting());
    out
      .family("abuse_intel_webhook_attempts_in_flight", "gauge", "Webhook attempts under way in this process.")
      .sample("abuse_intel_webhook_attempts_in_flight", this.services.webhookDispatcher.inFlightCount);
  }

  private renderIndex(out: Exposition): void {
    const index = this.services.index;
    out
      .family("abuse_intel_index_addresses", "gauge", "Entries in the in-memory reputation index, by address family.")
      .sample("abuse_intel_index_addresses", index.v4.size, { family: "ipv4" })
      .sample("abuse_intel_index_addresses", index.v6.size, { family: "ipv6" });
    out
      .family("abuse_intel_index_generation", "gauge", "Generation of the index: goes up on every change (blocklist ETags follow it).")
      .sample("abuse_intel_index_generation", index.generation);
    out.family("abuse_intel_index_bytes", "gauge", "Memory held by the index: trees and columns.").sample("abuse_intel_index_bytes", index.byteSize);
  }

  private renderJobs(out: Exposition): void {
    const scheduler = this.services.scheduler;
    if (!scheduler) return;
    const jobs = scheduler.jobs();
    out.family("abuse_intel_job_last_run_timestamp_seconds", "gauge", "When each scheduled job last ran (unix seconds); absent until its first run.");
    for (const j of jobs) if (j.lastRunAt !== null) out.sample("abuse_intel_job_last_run_timestamp_seconds", Date.parse(j.lastRunAt) / 1000, { job: j.name });
    out.family("abuse_intel_job_last_duration_seconds", "gauge", "How long each job's last run took.");
    for (const j of jobs) if (j.lastDurationMs !== null) out.sample("abuse_intel_job_last_duration_seconds", j.lastDurationMs / 1000, { job: j.name });
    out.family("abuse_intel_job_last_run_failed", "gauge", "1 when a job's last run failed (see GET /v1/admin/jobs for the error), else 0.");
    for (const j of jobs) out.sample("abuse_intel_job_last_run_failed", j.lastError === null ? 0 : 1, { job: j.name });
    out.family("abuse_intel_job_running", "gauge", "1 while this process runs the job.");
    for (const j of jobs) out.sample("abuse_intel_job_running", j.running ? 1 : 0, { job: j.name });
  }

  private renderDns(out: Exposition): void {
    const dns = this.dns;
    out.family("abuse_intel_dns_queries_total", "counter", "DNS blocklist queries answered, by transport (udp, tcp) and rcode.");
    for (const s of dns?.series() ?? []) out.sample("abuse_intel_dns_queries_total", s.count, { transport: s.transport, rcode: s.rcode });
    out
      .family("abuse_intel_dns_listed_total", "counter", "DNS blocklist answers that said an address is listed (the test point not counted).")
      .sample("abuse_intel_dns_listed_total", dns?.listed ?? 0);
    out
      .family("abuse_intel_dns_udp_errors_total", "counter", "DNS answers over UDP that failed (mostly a client that closed its port first: ICMP port unreachable).")
      .sample("abuse_intel_dns_udp_errors_total", dns?.udpErrors ?? 0);
  }

  private renderForwarding(out: Exposition): void {
    const forwarding = this.services.forwarding;
    if (forwarding === undefined) return;
    out.family("abuse_intel_forward_queue", "gauge", "Reports this edge acknowledged and has not yet handed to its primary.").sample("abuse_intel_forward_queue", forwarding.queued());
    out.family("abuse_intel_forwarded_total", "counter", "Reports this edge forwarded that the primary accepted (since this process started).").sample("abuse_intel_forwarded_total", forwarding.forwardedTotal());
    out
      .family("abuse_intel_forward_refused_total", "counter", "Reports the primary refused (invalid, a duplicate, past retention): recorded, never sent again (since this process started).")
      .sample("abuse_intel_forward_refused_total", forwarding.refusedTotal());
  }

  private renderProcess(out: Exposition): void {
    const memory = process.memoryUsage();
    const cpu = process.cpuUsage();
    out
      .family("abuse_intel_uptime_seconds", "gauge", "Seconds since this instance's services started.")
      .sample("abuse_intel_uptime_seconds", Math.max(0, (this.services.clock.now() - this.startedAtMs) / 1000));
    out
      .family("process_start_time_seconds", "gauge", "Start time of the process since the unix epoch in seconds.")
      .sample("process_start_time_seconds", Math.round(performance.timeOrigin) / 1000);
    out
      .family("process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.")
      .sample("process_cpu_seconds_total", (cpu.user + cpu.system) / 1e6);
    out.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.").sample("process_resident_memory_bytes", memory.rss);
    out
      .family("abuse_intel_memory_bytes", "gauge", "JavaScript memory by area: heap_used (objects on the heap), external (buffers and typed arrays outside it, e.g. the index).")
      .sample("abuse_intel_memory_bytes", memory.heapUsed, { area: "heap_used" })
      .sample("abuse_intel_memory_bytes", memory.external, { area: "external" });
  }

  private renderEventLoop(out: Exposition): void {
    const lag = this.lagWatch.recorder;
    out
      .family("abuse_intel_event_loop_lag_seconds", "gauge", `The longest the event loop was held (a ${LAG_WINDOW_SECONDS} s window): every request waited that long behind it.`)
      .sample("abuse_intel_event_loop_lag_seconds", Math.max(lag.largestRecent(performance.now()), this.lagWatch.lateNow()));
    out.family("abuse_intel_event_loop_delay_seconds", "histogram", "How late each tick of a timer a few milliseconds apart came: how long the event loop was held.");
    let cumulative = 0;
    for (let b = 0; b < LAG_BUCKETS.length; b++) {
      cumulative += lag.buckets[b];
      out.sample("abuse_intel_event_loop_delay_seconds_bucket", cumulative, { le: String(LAG_BUCKETS[b]) });
    }
    out.sample("abuse_intel_event_loop_delay_seconds_bucket", lag.count, { le: "+Inf" });
    out.sample("abuse_intel_event_loop_delay_seconds_sum", lag.sum);
    out.sample("abuse_intel_event_loop_delay_seconds_count", lag.count);
  }
}
