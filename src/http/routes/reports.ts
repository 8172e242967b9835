// Reports and credits over HTTP (contract 5.4–5.6): submitting a report (both payload shapes, user JWT), an
// admin's view and verify/reject of one report, and the signed-in user's credit balance and ledger.
// `GET /v1/credits/history` takes `limit` 1..100 (default 20) and `offset` ≥ 0 (default 0); anything else is 400.

import { Elysia } from "elysia";
import { AppError, notFound, validationFailed } from "../../domain/errors";
import { parsePage } from "../../domain/pagination";
import { parseReportInput } from "../../domain/report-input";
import type { AdminStatus } from "../../services/reports/states";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

export const HISTORY_DEFAULT_LIMIT = 20;

export function reportRoutes(services: Services, auth: AuthPlugin) {
  const { reports, reportStates, credits } = services;
  return new Elysia()
    .use(auth)
    .post(
      "/v1/ip/report",
      async ({ body, principal, set }) => {
        const data = await reports.submit(principal.userId, parseReportInput(body));
        set.status = 201;
        return { success: true, reportId: data.reportId, message: "Report accepted", data };
      },
      { auth: "user" },
    )
    .get("/v1/admin/reports/:id", ({ params }) => ({ success: true, data: reportStates.get(reportIdOf(params.id)) }), { auth: "admin" })
    .patch(
      "/v1/admin/reports/:id",
      ({ params, body, principal }) => {
        const id = reportIdOf(params.id);
        const status = adminStatusOf(body);
        return { success: true, data: reportStates.setStatus(id, status, principal.userId, services.clock.now()) };
      },
      { auth: "admin" },
    )
    .get("/v1/credits/balance", ({ principal }) => ({ success: true, data: credits.balance(principal.userId) }), { auth: "user" })
    .get(
      "/v1/credits/history",
      ({ query, principal }) => {
        const { limit, offset } = parsePage(query, { limit: HISTORY_DEFAULT_LIMIT, offset: 0 });
        const page = credits.history(principal.userId, limit, offset);
        return { success: true, data: page.entries, pagination: { limit, offset, total: page.total } };
      },
      { auth: "user" },
    );
}

/** A report id from the path: a positive decimal integer, else 404 (no such report can exist). */
function reportIdOf(raw: string): number {
  if (/^[1-9]\d{0,15}$/.test(raw) && Number.isSafeInteger(Number(raw))) return Number(raw);
  throw notFound(`No report ${raw}`);
}

function adminStatusOf(body: unknown): AdminStatus {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new AppError("bad_request", 'The request body must be a JSON object: {"status":"verified"|"rejected"}');
  const status = (body as { status?: unknown }).status;
  if (status === "verified" || status === "rejected") return status;
  throw validationFailed([{ field: "status", message: 'must be "verified" or "rejected"' }], 'Invalid status: must be "verified" or "rejected"');
}

