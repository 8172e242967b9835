// The OpenAPI operation of forwarded-reports.ts (GET /v1/openapi.json): an edge's batch of queued reports.

import { type Operation, array, bool, int, json, jsonBody, obj, operation, str, envelope, ref } from "../openapi/schema";

const forwardedReport = obj({
  id: str("Made by the edge, unique: stored at most once", { pattern: "^[A-Za-z0-9_-]{1,64}$" }),
  group: str("The request it came in with: reports of one group are about one address and are stored or refused together", { pattern: "^[A-Za-z0-9_-]{1,64}$" }),
  at: int("The report's time in ms since the epoch: its own (ownTime) or when the edge accepted it"),
  ownTime: bool("Whether `at` is the client's own time (an AbuseIPDB timestamp), checked against retention and the clock"),
  source: str(undefined, { enum: ["api", "abuseipdb"] }),
  report: ref("ReportShapeB"),
});
const result = obj(
  {
    id: str(),
    status: str(undefined, { enum: ["accepted", "refused"] }),
    reportId: str("The stored report (accepted)"),
    code: str("Why it was refused: an error code of the contract"),
    message: str(),
  },
  ["reportId", "code", "message"],
);

export const forwardedReportsPaths: Record<string, Record<string, Operation>> = {
  "/v1/reports/forwarded": {
    post: operation("forwardReports", {
      tag: "Reports and credits",
      access: "key",
      summary: "Reports queued by an edge, forwarded in a batch (contract 18)",
      description:
        "At most 1,000 reports, in order; each goes through the same intake as `POST /v1/ip/report`, credited to the account of the API key " +
        "(this route takes an API key in place of an access token). A report id is stored once: a batch sent again stores nothing twice and gets its first results. " +
        "A refusal (invalid, a duplicate for the account, a time past retention) is a per-report result; when something could not be stored the whole batch fails (503) and is sent again.",
      body: jsonBody(obj({ reports: array(forwardedReport, { minItems: 1, maxItems: 1000 }) })),
      ok: { 200: json("A result per report, in the batch's order.", envelope(obj({ results: array(result) }))) },
      errors: [400, 413, 415, 503],
    }),
  },
};
