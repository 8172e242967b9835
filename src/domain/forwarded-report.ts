// The wire form of a report an edge forwards to its primary (contract 18, `POST /v1/reports/forwarded`): the
// edge's id, the request it came in with (`group`: the reports of one AbuseIPDB request travel and count
// together), its time, and the report itself in `/v1/ip/report`'s shape B, validated again by the primary.

import { AppError, validationFailed } from "./errors";

/** At most this many reports a batch. */
export const MAX_FORWARD_BATCH = 1_000;

export type ForwardedSource = "api" | "abuseipdb";

export interface ForwardedReportWire {
  /** Made by the edge, unique: the primary stores each id once. */
  id: string;
  /** The request it came in with: reports of one group are about one address and are stored or refused together. */
  group: string;
  /** The report's time (ms): its own (`ownTime`, an AbuseIPDB timestamp) or when the edge accepted it. */
  at: number;
  ownTime: boolean;
  source: ForwardedSource;
  /** Shape B of `/v1/ip/report`. */
  report: { ip: string; category: string; severity: number; description: string; evidence: string | null };
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The batch's reports, or bad_request / validation_failed for a body the edge cannot have meant (not one report's problem). */
export function parseForwardBatch(body: unknown): ForwardedReportWire[] {
  if (typeof body !== "object" || body === null || !Array.isArray((body as { reports?: unknown }).reports)) {
    throw new AppError("bad_request", 'The request body must be a JSON object {"reports":[...]}');
  }
  const items = (body as { reports: unknown[] }).reports;
  if (items.length === 0 || items.length > MAX_FORWARD_BATCH) {
    throw validationFailed([{ field: "reports", message: `must hold 1 to ${MAX_FORWARD_BATCH} reports` }], `reports must hold 1 to ${MAX_FORWARD_BATCH} reports`);
  }
  const seen = new Set<string>();
  return items.map((item, i) => {
    const r = item as Partial<ForwardedReportWire> | null;
    const bad = (message: string) => validationFailed([{ field: `reports[${i}]`, message }], `reports[${i}]: ${message}`);
    if (typeof r !== "object" || r === null) throw bad("must be an object");
    if (typeof r.id !== "string" || !ID.test(r.id)) throw bad("id must be 1-64 letters, digits, - or _");
    if (seen.has(r.id)) throw bad(`id ${r.id} appears twice`);
    seen.add(r.id);
    if (typeof r.group !== "string" || !ID.test(r.group)) throw bad("group must be 1-64 letters, digits, - or _");
    if (typeof r.at !== "number" || !Number.isSafeInteger(r.at) || r.at < 0) throw bad("at must be a time in ms since the epoch");
    if (typeof r.ownTime !== "boolean") throw bad("ownTime must be true or false");
    if (r.source !== "api" && r.source !== "abuseipdb") throw bad('source must be "api" or "abuseipdb"');
    if (typeof r.report !== "object" || r.report === null) throw bad("report must be an object");
    return r as ForwardedReportWire;
  });
}
