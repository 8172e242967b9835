// Runs the scheduled jobs of contract section 9 on croner, never overlapping a job with itself, and keeps each
// job's last run in the job_runs table so status survives a restart and is shared with CLI runs.
// croner's trigger() bypasses its `protect` option, so manual runs go through the same busy check here.
//
// "Never overlaps itself" holds within one process (the server's timers and its admin API share the busy set).
// A CLI `jobs run` in another process can run alongside the server's run of the same job; every job is written
// to allow that: its changes are transactions that re-check what they change.

import { lastRunOf, recordRun } from "../store/job-runs";
import { Cron } from "croner";
import { type Clock, isoTime } from "../domain/clock";
import { AppError } from "../domain/errors";
import { type Store, writeLockHeldElsewhere } from "../store/database";
import type { JobStatus, Scheduler } from "../services/scheduled-jobs";

export type { JobStatus, Scheduler };

/** A schedule that disables a job's timer (it can still be run by hand). */
export const SCHEDULE_OFF = "off";

export interface JobContext {
  /** The injected clock's time at the start of the run. */
  now: number;
}

export interface Job {
  name: string;
  description: string;
  defaultSchedule: string;
  /** Returns a short summary of what it did (stored as the run's result). Long jobs should yield between steps. */
  run(context: JobContext): Promise<Record<string, unknown>> | Record<string, unknown>;
}

export interface SchedulerOptions {
  jobs: Job[];
  clock: Clock;
  store: Store;
  /** Patterns by job name, overriding the defaults; "off" disables a job's timer. Unknown names are refused. */
  schedules?: Record<string, string>;
  /** Where failures of timer-started runs are reported (default: stderr); a manual run's caller gets its status. */
  onError?: (job: string, error: unknown) => void;
}

/** A missed run is made up at start only when the next scheduled one is further away than this. */
const CATCH_UP_UNLESS_NEXT_WITHIN_MS = 5 * 60_000;
/** How often a scheduled run waiting for another process's write lock looks again. */
const LOCK_RECHECK_MS = 250;

export function createScheduler(options: SchedulerOptions): Scheduler {
  const { clock, store } = options;
  const byName = new Map(options.jobs.map((job) => [job.name, job]));
  const onError = options.onError ?? ((job, error) => console.error(`job ${job} failed:`, error instanceof Error ? error.message : error));
  for (const name of Object.keys(options.schedules ?? {})) {
    if (!byName.has(name)) throw new AppError("bad_request", `a schedule is set for an unknown job "${name}"; jobs: ${[...byName.keys()].join(", ")}`);
  }
  const scheduleOf = (job: Job) => (options.schedules?.[job.name] ?? job.defaultSchedule).trim();
  // One paused Cron per job answers "when next?" with the injected clock, whether or not the timers run.
  const patterns = new Map<string, Cron | null>();
  for (const job of options.jobs) {
    const schedule = scheduleOf(job);
    if (schedule.toLowerCase() === SCHEDULE_OFF) {
      patterns.set(job.name, null);
      continue;
    }
    try {
      patterns.set(job.name, new Cron(schedule, { paused: true, timezone: "UTC" }));
    } catch (error) {
      throw new AppError("bad_request", `invalid schedule "${schedule}" for job ${job.name}: ${(error as Error).message}`);
    }
  }
  const running = new Map<string, Promise<void>>();
  /** Set by stop(), cleared by start(): a scheduled run still waiting for the write lock gives up. */
  let stopping = false;
  const timers: Cron[] = [];

  function statusOf(job: Job): JobStatus {
    const row = lastRunOf(store, job.name);
    const next = patterns.get(job.name)?.nextRun(new Date(clock.now())) ?? null;
    return {
      name: job.name,
      description: job.description,
      schedule: patterns.get(job.name) ? scheduleOf(job) : SCHEDULE_OFF,
      lastRunAt: row?.lastRunAt != null ? isoTime(row.lastRunAt) : null,
      lastDurationMs: row?.lastDurationMs ?? null,
      lastError: row?.lastError ?? null,
      lastResult: row?.lastResult ? (JSON.parse(row.lastResult) as Record<string, unknown>) : null,
      nextRunAt: next ? next.toISOString() : null,
      running: running.has(job.name),
    };
  }

  /** Runs `job` unless it is running already (returns null then). The busy mark is set before any await. */
  function execute(job: Job, scheduled: boolean): Promise<void> | null {
    if (running.has(job.name)) return null;
    const done = (async () => {
      // Another process holding the write lock (an import, for minutes): a scheduled run's first write would hold
      // the event loop for the busy timeout (every request with it), so the run waits for the lock, between
      // requests, and starts when it is free. A run by hand goes ahead: someone asked for it now.
      // A stop ends the wait: the run is skipped, or the stop would last as long as the other process's lock.
      while (scheduled && !stopping && writeLockHeldElsewhere(store)) await Bun.sleep(LOCK_RECHECK_MS);
      if (stopping) return;
      const startedAt = clock.now();
      const started = performance.now();
      let lastError: string | null = null;
      let result: Record<string, unknown> | null = null;
      try {
        result = await job.run({ now: startedAt });
      } catch (error) {
        lastError = (error instanceof Error ? error.message : String(error)) || "failed";
        if (scheduled) onError(job.name, error);
      }
      const row = {
        name: job.name,
        lastRunAt: startedAt,
        lastDurationMs: Math.round(performance.now() - started),
        lastError,
        lastResult: result ? JSON.stringify(result) : null,
      };
      try {
        recordRun(store, row);
      } catch (error) {
        onError(job.name, new Error(`could not record the run: ${(error as Error).message}`));
      }
    })().finally(() => running.delete(job.name));
    running.set(job.name, done);
    return done;
  }

  function find(name: string): Job {
    const job = byName.get(name);
    if (!job) throw new AppError("not_found", `No job named "${name}"; jobs: ${[...byName.keys()].join(", ")}`);
    return job;
  }

  return {
    jobs: () => options.jobs.map(statusOf),
    status: (name) => statusOf(find(name)),
    async runNow(name) {
      const job = find(name);
      const run = execute(job, false);
      if (run === null) throw new AppError("conflict", `Job ${name} is already running`);
      await run;
      return statusOf(job);
    },
    start() {
      if (timers.length > 0) return;
      stopping = false;
      for (const job of options.jobs) {
        const pattern = patterns.get(job.name);
        if (!pattern) continue;
        timers.push(
          // Unnamed: croner keeps named jobs in a process-wide registry, and tests run several schedulers at once.
          new Cron(
            scheduleOf(job),
            { timezone: "UTC", protect: true, catch: (e) => onError(job.name, e) },
            // A run still going (started by hand) makes this tick a no-op rather than an overlap.
            () => execute(job, true) ?? undefined,
          ),
        );
      }
      // A run missed while the server was down (a restart across the daily snapshot's hour) is made up once now,
      // unless the next one is near anyway (the every-minute jobs) or the job never ran (a new data directory).
      const now = clock.now();
      for (const job of options.jobs) {
        const pattern = patterns.get(job.name);
        const last = lastRunOf(store, job.name)?.lastRunAt ?? null;
        if (!pattern || last == null) continue;
        const missed = pattern.previousRuns(1, new Date(now))[0];
        const next = pattern.nextRun(new Date(now));
        if (missed !== undefined && missed.getTime() > last && (next === null || next.getTime() - now > CATCH_UP_UNLESS_NEXT_WITHIN_MS)) {
          void execute(job, true);
        }
      }
    },
    async stop() {
      stopping = true;
      for (const timer of timers.splice(0)) timer.stop();
      await Promise.all(running.values());
    },
    get started() {
      return timers.length > 0;
    },
  };
}
