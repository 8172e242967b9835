import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ManualClock } from "../../../src/domain/clock";
import { AppError } from "../../../src/domain/errors";
import { createScheduler, type Job, type Scheduler } from "../../../src/jobs/scheduler";
import { openMemoryStore, openStore, type Store } from "../../../src/store/database";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

let clock: ManualClock;
let store: Store;
let schedulers: Scheduler[];

beforeEach(() => {
  clock = new ManualClock(Date.parse("2026-11-21T08:00:30.000Z"));
  store = openMemoryStore();
  schedulers = [];
});
afterEach(async () => {
  for (const s of schedulers) await s.stop();
  store.close();
});

function scheduler(jobs: Job[], schedules?: Record<string, string>): Scheduler {
  const s = createScheduler({ jobs, clock, store, schedules, onError: () => {} });
  schedulers.push(s);
  return s;
}

/** A job that stays running until the test releases it, counting its runs. */
function slowJob(name = "slow") {
  const gate = { runs: 0, release: () => {} };
  const job: Job = {
    name,
    description: "waits for the test",
    defaultSchedule: "*/5 * * * *",
    run: () => {
      gate.runs++;
      return new Promise((resolve) => {
        gate.release = () => resolve({ ran: gate.runs });
      });
    },
  };
  return { job, gate };
}

async function errorOf(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

describe("runNow", () => {
  test("a job never overlaps itself: a second run while the first is under way is 409 and does not start", async () => {
    const { job, gate } = slowJob();
    const s = scheduler([job]);
    const first = s.runNow("slow");
    expect(s.status("slow").running).toBe(true);

    const second = await errorOf(s.runNow("slow"));
    expect([second.errorCode, second.status]).toEqual(["conflict", 409]);
    expect(gate.runs).toBe(1);

    gate.release();
    const status = await first;
    expect(status).toMatchObject({ running: false, lastResult: { ran: 1 }, lastError: null });
    // Once it has finished it can run again.
    const third = s.runNow("slow");
    gate.release();
    expect((await third).lastResult).toEqual({ ran: 2 });
  });

  test("records the run: start time from the clock, duration, result; a failure records its message", async () => {
    let fail = false;
    const s = scheduler([
      {
        name: "work",
        description: "does work",
        defaultSchedule: "0 * * * *",
        run: ({ now }) => {
          if (fail) throw new Error("the disk is full");
          return { at: now };
        },
      },
    ]);
    expect(s.status("work")).toEqual({
      name: "work",
      description: "does work",
      schedule: "0 * * * *",
      lastRunAt: null,
      lastDurationMs: null,
      lastError: null,
      lastResult: null,
      nextRunAt: "2026-11-21T09:00:00.000Z",
      running: false,
    });

    const ok = await s.runNow("work");
    expect(ok).toMatchObject({ lastRunAt: "2026-11-21T08:00:30.000Z", lastError: null, lastResult: { at: clock.now() } });
    expect(ok.lastDurationMs).toBeGreaterThanOrEqual(0);

    clock.advance(3_600_000);
    fail = true;
    const failed = await s.runNow("work");
    expect(failed).toMatchObject({ lastRunAt: "2026-11-21T09:00:30.000Z", lastError: "the disk is full", lastResult: null, nextRunAt: "2026-11-21T10:00:00.000Z" });
  });

  test("the status lives in the store: another scheduler on it (a restart, a CLI) sees the last run", async () => {
    const job: Job = { name: "work", description: "", defaultSchedule: "0 * * * *", run: () => ({ n: 1 }) };
    await scheduler([job]).runNow("work");
    expect(scheduler([job]).status("work")).toMatchObject({ lastRunAt: "2026-11-21T08:00:30.000Z", lastResult: { n: 1 } });
  });

  test("an unknown job is 404 naming the jobs", async () => {
    const s = scheduler([slowJob("a").job, slowJob("b").job]);
    const error = await errorOf(s.runNow("c"));
    expect([error.errorCode, error.message]).toEqual(["not_found", 'No job named "c"; jobs: a, b']);
  });
});

describe("schedules", () => {
  test("overrides replace defaults; nextRunAt follows the clock; off leaves no next run", () => {
    const s = scheduler([slowJob("a").job, slowJob("b").job, slowJob("c").job], { b: "15 3 * * *", c: "off" });
    expect(s.jobs().map((j) => [j.name, j.schedule, j.nextRunAt])).toEqual([
      ["a", "*/5 * * * *", "2026-11-21T08:05:00.000Z"],
      ["b", "15 3 * * *", "2026-11-22T03:15:00.000Z"],
      ["c", "off", null],
    ]);
  });

  test("an invalid pattern or a schedule for an unknown job is refused when the scheduler is made", () => {
    expect(() => scheduler([slowJob("a").job], { a: "every minute" })).toThrow(/invalid schedule "every minute" for job a/);
    expect(() => scheduler([slowJob("a").job], { nope: "* * * * *" })).toThrow(/unknown job "nope"/);
  });

  test("start() arms timers, stop() disarms them and waits for a run under way", async () => {
    const { job, gate } = slowJob();
    const s = scheduler([job]);
    s.start();
    expect(s.started).toBe(true);
    const run = s.runNow("slow");
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    await Bun.sleep(1);
    expect(stopped).toBe(false);
    gate.release();
    await Promise.all([run, stopping]);
    expect(s.started).toBe(false);
  });
});

describe("start", () => {
  const counting = (name: string, defaultSchedule: string) => {
    const job = { runs: 0 } as { runs: number; job: Job };
    job.job = { name, description: "counts", defaultSchedule, run: () => (job.runs++, Promise.resolve({})) };
    return job;
  };
  const lastRan = (name: string, at: number) =>
    store.sqlite.query("INSERT INTO job_runs (name, last_run_at, last_duration_ms, last_error, last_result) VALUES (?, ?, 1, NULL, NULL)").run(name, at);

  test("a run missed while the server was down is made up once; not one that ran, nor a new job, nor one due within minutes", async () => {
    const DAY = 86_400_000;
    const missed = counting("snapshot", "0 3 * * *"); // its 03:00 today fell while the server was down
    const done = counting("daily", "0 3 * * *"); // ran at 03:00 today
    const fresh = counting("fresh", "0 3 * * *"); // never ran: a new data directory
    const soon = counting("minutely", "* * * * *"); // missed runs, but the next is in 30 s
    lastRan("snapshot", clock.now() - 2 * DAY);
    lastRan("daily", Date.parse("2026-11-21T03:00:00.000Z"));
    lastRan("minutely", clock.now() - DAY);
    scheduler([missed.job, done.job, fresh.job, soon.job]).start();
    await Bun.sleep(50);
    expect([missed.runs, done.runs, fresh.runs, soon.runs]).toEqual([1, 0, 0, 0]);
  });
});

test("stop() does not wait for another process's write lock: a scheduled run still waiting for it is skipped", async () => {
  const dir = mkdtempSync(join(tmpdir(), "abuse-intel-scheduler-lock-"));
  const fileStore = openStore(dir);
  const other = new Database(join(dir, "abuse-intel.db"));
  try {
    let runs = 0;
    const job: Job = { name: "tick", description: "counts", defaultSchedule: "* * * * * *", run: async () => ({ ran: ++runs }) };
    const s = createScheduler({ jobs: [job], clock, store: fileStore, onError: () => {} });
    other.exec("BEGIN IMMEDIATE");
    s.start();
    await Bun.sleep(1_300); // a tick has come and waits for the lock
    // The lock is still held while stop() settles: a stop that waited for it would never settle.
    const stopped = await Promise.race([s.stop().then(() => "stopped"), Bun.sleep(20_000).then(() => "still waiting")]);
    expect(stopped).toBe("stopped");
    other.exec("COMMIT");
    expect(runs).toBe(0);
  } finally {
    other.close();
    fileStore.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
