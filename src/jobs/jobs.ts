// The scheduled jobs of the product (contract section 9), in the order `GET /v1/admin/jobs` lists them, with
// their default schedules (croner patterns, UTC):
//
// | job            | default          |
// |----------------|------------------|
// | rescore        | `*/10 * * * *`   |
// | verify         | `* * * * *`      |
// | detect-threats | `* * * * *`      |
// | expire         | `0 * * * *`      |
// | snapshot       | `0 3 * * *`      |
//
// `config.schedules` (`--schedule NAME=PATTERN`, `ABUSE_INTEL_SCHEDULE_<NAME>`) overrides them; `off` disables a
// job's timer.

import type { AddressChangePublisher } from "../services/changes/address-changes";
import type { AddressScorer } from "../services/reports/scorer";
import type { ReportStateService } from "../services/reports/states";
import type { ThreatService } from "../services/threats/threats";
import type { Store } from "../store/database";
import { detectThreatsJob } from "./detect-threats";
import { expireJob } from "./expire";
import { type RescoreOptions, rescoreJob } from "./rescore";
import type { Job } from "./scheduler";
import { type SnapshotExporter, snapshotJob } from "./snapshot";
import { verifyJob } from "./verify";

export const JOB_NAMES = ["rescore", "verify", "detect-threats", "expire", "snapshot"] as const;
export type JobName = (typeof JOB_NAMES)[number];

export interface JobDeps {
  store: Store;
  dataDir: string;
  scorer: AddressScorer;
  addressChanges: AddressChangePublisher;
  reportStates: Pick<ReportStateService, "verifyCommunityInTurns" | "expireReports">;
  threats: Pick<ThreatService, "detect" | "thresholds">;
  /** Writes a snapshot file; null while the product has none (the snapshot job then fails saying so). */
  snapshotExporter: SnapshotExporter | null;
  rescore?: Partial<RescoreOptions>;
}

export function createJobs(deps: JobDeps): Job[] {
  return [
    rescoreJob({ store: deps.store, scorer: deps.scorer, changes: deps.addressChanges }, deps.rescore),
    verifyJob(deps.reportStates),
    detectThreatsJob(deps.threats),
    expireJob(deps.reportStates),
    snapshotJob({ dataDir: deps.dataDir, exporter: deps.snapshotExporter }),
  ];
}
