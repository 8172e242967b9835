// `POST /v1/reports/forwarded` (contract 18): a batch of reports an edge queued, credited to the account of the
// API key it is sent with (this route takes an API key where reports otherwise need an access token).

import { Elysia } from "elysia";
import { parseForwardBatch } from "../../domain/forwarded-report";
import type { Services } from "../../services/services";
import { ForwardedReports } from "../../services/reports/forwarded";
import type { AuthPlugin } from "../auth";

export const FORWARDED_REPORTS_PATH = "/v1/reports/forwarded";

export function forwardedReportRoutes(services: Services, auth: AuthPlugin) {
  const forwarded = new ForwardedReports({ reports: services.reports, clock: services.clock, retentionDays: services.config.retentionDays });
  return new Elysia().use(auth).post(
    FORWARDED_REPORTS_PATH,
    async ({ body, principal }) => ({ success: true, data: { results: await forwarded.receive(principal.userId, parseForwardBatch(body)) } }),
    { auth: "key" },
  );
}
