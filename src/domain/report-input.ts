// Reads the untrusted JSON body of `POST /v1/ip/report` (contract 5.4) into a typed ReportInput. Both published
// payload shapes are accepted on the one path; the shape is told by its address field.
//
// Shape A `{ipAddress, category, description, severity}`: all four required, severity an integer 1..5.
// Shape B `{ip, category, severity?, description?, evidence?}`: severity an integer 1..5 or a word
//   (low 1, medium 3, high 4, critical 5; any case), default 3; description default "".
// Decisions where the contract is silent: a field whose value is `null` is treated as absent (clients often
// serialise a missing optional field as null); `evidence` is read in both shapes, since a shape-A client sending it
// means it to be kept; lengths are counted in characters (Unicode code points), not UTF-16 units. Unknown fields
// are ignored. Every bad field is listed in one validation_failed error.

import { type Category, tryParseCategory, unknownCategoryMessage } from "./categories";
import { AppError, type FieldError, validationFailed } from "./errors";
import { type Ip, tryParseIp, unreportableReason } from "./ip";
import { type Severity, isSeverity } from "./scoring";

export const MAX_DESCRIPTION_CHARS = 1_024;
export const MAX_EVIDENCE_CHARS = 16_384;

/** Shape B's severity words. There is none for 2. */
export const SEVERITY_WORDS: Readonly<Record<string, Severity>> = Object.freeze({ low: 1, medium: 3, high: 4, critical: 5 });
export const DEFAULT_SEVERITY: Severity = 3;

export type ReportShape = "A" | "B";

export interface ReportInput {
  readonly ip: Ip;
  readonly category: Category;
  readonly severity: Severity;
  readonly description: string;
  readonly evidence: string | null;
  readonly shape: ReportShape;
}

/** Whether `s` has more than `limit` characters (code points, as the limits count them). */
export function exceedsChars(s: string, limit: number): boolean {
  if (s.length <= limit) return false; // code points never outnumber UTF-16 units
  let count = 0;
  for (const _ of s) if (++count > limit) return true;
  return false;
}

const present = (body: Record<string, unknown>, key: string): boolean => body[key] !== undefined && body[key] !== null;

/** Parses the body or throws AppError: bad_request when it is not a JSON object, else validation_failed with details. */
export function parseReportInput(body: unknown): ReportInput {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new AppError("bad_request", "The request body must be a JSON object");
  }
  const b = body as Record<string, unknown>;
  const problems: FieldError[] = [];
  const hasA = present(b, "ipAddress");
  const hasB = present(b, "ip");
  // With both or neither address field the shape is unknown; the other fields are then checked by shape B's
  // looser rules so that the error lists only what is wrong under either reading.
  const shape: ReportShape = hasA && !hasB ? "A" : "B";

  let ip: Ip | null = null;
  if (hasA && hasB) {
    problems.push({ field: "ip", message: "give either ipAddress (shape A) or ip (shape B), not both" });
  } else if (!hasA && !hasB) {
    problems.push({ field: "ipAddress", message: "is required: the address as ipAddress (shape A) or ip (shape B)" });
  } else {
    const field = hasA ? "ipAddress" : "ip";
    const raw = b[field];
    if (typeof raw !== "string") {
      problems.push({ field, message: "must be a string holding an IPv4 or IPv6 address" });
    } else {
      const parsed = tryParseIp(raw);
      if (typeof parsed === "string") {
        problems.push({ field, message: parsed });
      } else {
        const reason = unreportableReason(parsed);
        if (reason !== null) problems.push({ field, message: reason });
        else ip = parsed;
      }
    }
  }

  let category: Category | null = null;
  if (!present(b, "category")) {
    problems.push({ field: "category", message: "is required" });
  } else {
    category = tryParseCategory(b.category);
    if (category === null) problems.push({ field: "category", message: unknownCategoryMessage(b.category) });
  }

  let severity: Severity | null = null;
  if (!present(b, "severity")) {
    if (shape === "A") problems.push({ field: "severity", message: "is required: an integer from 1 to 5" });
    else severity = DEFAULT_SEVERITY;
  } else if (isSeverity(b.severity)) {
    severity = b.severity;
  } else if (shape === "B" && typeof b.severity === "string" && Object.hasOwn(SEVERITY_WORDS, b.severity.trim().toLowerCase())) {
    severity = SEVERITY_WORDS[b.severity.trim().toLowerCase()];
  } else {
    problems.push({
      field: "severity",
      message: shape === "A" ? "must be an integer from 1 to 5" : "must be an integer from 1 to 5 or one of low, medium, high, critical",
    });
  }

  let description = "";
  if (!present(b, "description")) {
    if (shape === "A") problems.push({ field: "description", message: "is required (it may be empty)" });
  } else if (typeof b.description !== "string") {
    problems.push({ field: "description", message: "must be a string" });
  } else if (exceedsChars(b.description, MAX_DESCRIPTION_CHARS)) {
    problems.push({ field: "description", message: `must be at most ${MAX_DESCRIPTION_CHARS} characters` });
  } else {
    description = b.description;
  }

  let evidence: string | null = null;
  if (present(b, "evidence")) {
    if (typeof b.evidence !== "string") problems.push({ field: "evidence", message: "must be a string" });
    else if (exceedsChars(b.evidence, MAX_EVIDENCE_CHARS)) problems.push({ field: "evidence", message: `must be at most ${MAX_EVIDENCE_CHARS} characters` });
    else evidence = b.evidence;
  }

  if (problems.length > 0 || ip === null || category === null || severity === null) {
    const summary = problems.map((p) => `${p.field}: ${p.message}`).join("; ");
    throw validationFailed(problems, `Invalid report: ${summary}`);
  }
  return { ip, category, severity, description, evidence, shape };
}
