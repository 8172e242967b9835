// The `verify` job (contract 5.5, 9): community verification every minute. Groups of one address and category
// reported by at least 3 distinct reporters within 7 days have their pending reports verified, each with a
// transition, +2 credits and one `ip.verified` event (all in src/services/reports/states.ts).

import type { ReportStateService } from "../services/reports/states";
import type { Job } from "./scheduler";

export function verifyJob(reportStates: Pick<ReportStateService, "verifyCommunityInTurns">): Job {
  return {
    name: "verify",
    description: "community verification: 3 distinct reporters of one address and category within 7 days verify its pending reports; emits ip.verified",
    defaultSchedule: "* * * * *",
    run: async ({ now }) => ({ ...(await reportStates.verifyCommunityInTurns(now)) }),
  };
}
