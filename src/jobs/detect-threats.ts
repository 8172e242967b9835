// The `detect-threats` job (contract 9): every minute, subnet bursts and category campaigns among the reports of
// the last hour are stored in `threats` and announced as `threat.detected`, each pattern at most once per 24
// hours. The patterns are src/domain/threat-patterns.ts; storage and events src/services/threats/threats.ts.

import type { ThreatService } from "../services/threats/threats";
import type { Job } from "./scheduler";

export function detectThreatsJob(threats: Pick<ThreatService, "detect" | "thresholds">): Job {
  const t = threats.thresholds;
  const minutes = Math.round(t.windowMs / 60_000);
  return {
    name: "detect-threats",
    description:
      `subnet_burst: ≥ ${t.subnetMinAddresses} distinct addresses of one /${t.ipv4SubnetPrefix} (IPv4) or /${t.ipv6SubnetPrefix} (IPv6) ` +
      `within ${minutes} min; category_campaign: one category against ≥ ${t.campaignMinAddresses} distinct addresses of one ASN ` +
      `within ${minutes} min; emits threat.detected`,
    defaultSchedule: "* * * * *",
    run: async ({ now }) => ({ ...(await threats.detect(now)) }),
  };
}
