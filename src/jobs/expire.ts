// The `expire` job (contract 5.5, 9): hourly, every report past retention becomes `expired` with a transition
// row, and the addresses that still counted it are rescored (all in src/services/reports/states.ts). Scoring
// already ignores such reports before the job runs; the job makes the state and the stored scores say so.

import type { ReportStateService } from "../services/reports/states";
import type { Job } from "./scheduler";

export function expireJob(reportStates: Pick<ReportStateService, "expireReports">): Job {
  return {
    name: "expire",
    description: "moves reports past retention to expired",
    defaultSchedule: "0 * * * *",
    run: async ({ now }) => ({ ...(await reportStates.expireReports(now)) }),
  };
}
