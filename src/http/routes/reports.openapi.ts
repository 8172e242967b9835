// The OpenAPI operations of the routes in reports.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, str, id, obj, TRUE, envelope, paged, json, jsonBody, operation, pageParams } from "../openapi/schema";

export const reportsPaths: Record<string, Record<string, Operation>> = {
  "/v1/ip/report": {
    post: operation("report", {
      tag: "Reports and credits",
      access: "user",
      summary: "Report an abusive address (both payload shapes)",
      description:
        "Shape A `{ipAddress, category, description, severity}` (all required) or shape B `{ip, category, severity?, description?, evidence?}`; " +
        "both `ipAddress` and `ip`, or neither, is 400. Unknown fields are ignored. The report is committed before the 201. " +
        "The same reporter reporting the same address within 15 minutes: 429 `duplicate_report`.",
      body: jsonBody({ oneOf: [ref("ReportShapeA"), ref("ReportShapeB")] }),
      ok: { 201: json("Accepted.", obj({ success: TRUE, reportId: id("Report"), message: { const: "Report accepted" }, data: ref("ReportAccepted") })) },
    }),
  },
  "/v1/credits/balance": {
    get: operation("creditBalance", { tag: "Reports and credits", access: "user", summary: "Your credit balance", ok: { 200: json("The balance.", envelope(ref("CreditBalance"))) } }),
  },
  "/v1/credits/history": {
    get: operation("creditHistory", {
      tag: "Reports and credits",
      access: "user",
      summary: "Your credit ledger, newest first",
      params: pageParams(20),
      ok: { 200: json("Ledger rows.", paged(ref("LedgerEntry"))) },
      errors: [400],
    }),
  },
  "/v1/admin/reports/{id}": {
    get: operation("getReport", { tag: "Administration", access: "admin", summary: "One report with its transitions", params: ["reportId"], ok: { 200: json("The report.", envelope(ref("Report"))) }, errors: [404] }),
    patch: operation("setReportStatus", {
      tag: "Administration",
      access: "admin",
      summary: "Verify or reject a report",
      description: "A rejected report no longer counts and its credits are reversed.",
      params: ["reportId"],
      body: jsonBody(obj({ status: str(undefined, { enum: ["verified", "rejected"] }) })),
      ok: { 200: json("The report as it now is.", envelope(ref("Report"))) },
      errors: [404],
    }),
  },
};
