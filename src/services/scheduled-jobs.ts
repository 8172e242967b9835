// What routes and commands see of the scheduled jobs (contract section 9); src/jobs/scheduler.ts implements it.

export interface JobStatus {
  name: string;
  description: string;
  /** The croner pattern in force (UTC), or "off". */
  schedule: string;
  lastRunAt: string | null;
  lastDurationMs: number | null;
  /** The last run's error message; null when it succeeded (or never ran). */
  lastError: string | null;
  /** What the last successful run reported doing. */
  lastResult: Record<string, unknown> | null;
  /** The schedule's next occurrence after now; null when the schedule is off. */
  nextRunAt: string | null;
  /** Whether this process is running it right now. */
  running: boolean;
}

export interface Scheduler {
  jobs(): JobStatus[];
  status(name: string): JobStatus;
  /** Runs a job now and resolves with its status afterwards; 404 for an unknown job, 409 when it is already running. */
  runNow(name: string): Promise<JobStatus>;
  /** Starts the croner timers (a server does; the CLI's `jobs run` does not). */
  start(): void;
  /** Stops the timers and waits for runs under way to finish. */
  stop(): Promise<void>;
  readonly started: boolean;
}
