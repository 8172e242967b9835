// The report routes of an edge that forwards (contract 18): `POST /v1/ip/report` (202, queued), `/api/v2/report`
// (200, the score of the snapshot it serves) and `/api/v2/bulk-report`, with the edge's own `--api-key` keys, also
// before its first snapshot. Validation is the primary's (parseReportInput, report-params.ts); what passes is
// queued by the EdgeIntake and acknowledged once durable. Errors keep each API's own body.

import { AppError } from "../domain/errors";
import type { Ip } from "../domain/ip";
import type { Principal } from "../domain/principal";
import { parseReportInput } from "../domain/report-input";
import { DAY_MS } from "../domain/scoring";
import type { Credentials } from "../services/accounts/credentials";
import { type BulkRow, type InvalidRow, parseAbuseIpdbReport, parseBulkReport } from "../services/abuseipdb/report-params";
import { ParameterError } from "../services/abuseipdb/wire";
import type { EdgeIntake, EdgeSubmission } from "../services/edge/forward-intake";
import { errorAnswer, UNLIMITED_RATE_LIMIT } from "./abuseipdb/router";
import { readParams } from "./abuseipdb/params";
import { bodyRuleFor, readBody } from "./body";
import { errorResponse, toAppError } from "./errors";

export interface EdgeReportDeps {
  intake: EdgeIntake;
  credentials: Credentials;
  retentionDays: number;
  now: () => number;
  /** AbuseIPDB's confidence of the address in the snapshot served now (0 before the first one). */
  confidenceOf: (ip: Ip) => number;
}

type Handler = (request: Request) => Promise<Response>;

/** The three routes, for Bun's router. */
export function edgeReportRoutes(deps: EdgeReportDeps): Record<string, { POST: Handler }> {
  return {
    "/v1/ip/report": { POST: (request) => v1Report(deps, request) },
    "/api/v2/report": { POST: (request) => v2(deps, request, v2Report) },
    "/api/v2/bulk-report": { POST: (request) => v2(deps, request, v2BulkReport) },
  };
}

/** The client a report is from: its key's digest (the duplicate rule is per key). */
const clientOf = (principal: Principal) => principal.staticKey ?? String(principal.userId);

async function v1Report(deps: EdgeReportDeps, request: Request): Promise<Response> {
  try {
    const principal = v1Principal(deps.credentials, request);
    const input = parseReportInput(await readBody(request, bodyRuleFor("/v1/ip/report")));
    const [[id]] = await deps.intake.accept(clientOf(principal), [{ inputs: [input], atMs: null, source: "api" }]);
    return Response.json({ success: true, data: { queued: true, id } }, { status: 202 });
  } catch (error) {
    return errorResponse(toAppError("UNKNOWN", error));
  }
}

function v1Principal(credentials: Credentials, request: Request): Principal {
  const authorization = request.headers.get("authorization");
  const key = authorization !== null && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : request.headers.get("x-api-key")?.trim();
  if (key === undefined || key === "") throw new AppError("unauthorized", "Missing credential: send X-API-Key or Authorization: Bearer");
  const principal = credentials.byApiKey(key);
  if (principal === null) throw new AppError("unauthorized", "Invalid or revoked credential");
  return principal;
}

type V2Handler = (deps: EdgeReportDeps, principal: Principal, params: Map<string, string>) => Promise<unknown>;

async function v2(deps: EdgeReportDeps, request: Request, handler: V2Handler): Promise<Response> {
  const url = new URL(request.url);
  const headers: Record<string, string> = {
    "x-ratelimit-limit": String(UNLIMITED_RATE_LIMIT),
    "x-ratelimit-remaining": String(UNLIMITED_RATE_LIMIT),
    "x-ratelimit-reset": String((Math.floor(deps.now() / DAY_MS) + 1) * (DAY_MS / 1000)),
  };
  try {
    const key = (request.headers.get("key") ?? url.searchParams.get("key") ?? "").trim();
    const principal = key === "" ? null : deps.credentials.byApiKey(key);
    if (principal === null) {
      return Response.json({ errors: [{ detail: "Authentication failed. Your API key is either missing, incorrect, or revoked.", status: 401 }] }, { status: 401, headers });
    }
    const data = await handler(deps, principal, await readParams(request, url));
    return Response.json({ data }, { headers });
  } catch (error) {
    return errorAnswer(error, headers);
  }
}

async function v2Report(deps: EdgeReportDeps, principal: Principal, params: Map<string, string>) {
  const report = parseAbuseIpdbReport(
    { ip: params.get("ip"), categories: params.get("categories"), comment: params.get("comment"), timestamp: params.get("timestamp") },
    deps.now(),
    deps.retentionDays,
  );
  await deps.intake.accept(clientOf(principal), [{ inputs: report.inputs, atMs: report.atMs, source: "abuseipdb" }]);
  return { ipAddress: report.ip.text, abuseConfidenceScore: deps.confidenceOf(report.ip) };
}

/** Every good row queued, or none when the queue cannot take them all; duplicates listed as AbuseIPDB lists them. */
async function v2BulkReport(deps: EdgeReportDeps, principal: Principal, params: Map<string, string>) {
  const csv = params.get("csv");
  if (csv === undefined) throw new ParameterError("csv", "The csv field is required: a file of IP,Categories,ReportDate,Comment lines.");
  const { good, invalid } = parseBulkReport(csv, deps.now(), deps.retentionDays);
  const client = clientOf(principal);
  const seen = new Set<string>();
  const taken: BulkRow[] = [];
  const refused: InvalidRow[] = [...invalid];
  for (const row of good) {
    if (seen.has(row.ip.text) || deps.intake.duplicateWait(client, row.ip.text) !== null) {
      refused.push({ error: "Duplicate IP", input: row.input, rowNumber: row.rowNumber });
      continue;
    }
    seen.add(row.ip.text);
    taken.push(row);
  }
  if (taken.length > 0) {
    const submissions: EdgeSubmission[] = taken.map((row) => ({ inputs: row.inputs, atMs: row.atMs, source: "abuseipdb" }));
    await deps.intake.accept(client, submissions);
  }
  refused.sort((a, b) => a.rowNumber - b.rowNumber);
  return { savedReports: taken.length, invalidReports: refused };
}
