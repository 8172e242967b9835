// The `job_runs` table (contract section 9): each scheduled job's last run, its duration, error and result.

import { eq } from "drizzle-orm";
import type { Store } from "./database";
import { jobRuns } from "./schema";

export interface JobRunRow {
  name: string;
  lastRunAt: number | null;
  lastDurationMs: number | null;
  lastError: string | null;
  /** JSON summary of what the run did. */
  lastResult: string | null;
}

export function lastRunOf(store: Store, name: string): JobRunRow | null {
  return store.db.select().from(jobRuns).where(eq(jobRuns.name, name)).get() ?? null;
}

export function recordRun(store: Store, row: JobRunRow): void {
  store.db.insert(jobRuns).values(row).onConflictDoUpdate({ target: jobRuns.name, set: row }).run();
}
