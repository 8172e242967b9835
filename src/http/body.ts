// Request bodies as the contract wants them (section 1): JSON routes take application/json up to 64 KiB;
// a wrong media type is 415, malformed JSON 400, too large 413. A route taking text (feeds) names its own limit;
// `/api/v2` reads its forms itself (abuseipdb/params.ts) with readLimited.

import { scanBulkBody } from "../domain/bulk-inputs";
import { AppError } from "../domain/errors";
import type { AuthLevel } from "../domain/principal";

export const JSON_BODY_LIMIT = 64 * 1024;

export interface BodyRule {
  /** Accepted media types (lowercase, without parameters). */
  types: string[];
  limit: number;
  /** For a large body: the credential checked before any of it is read (see app.ts). */
  readFor?: AuthLevel;
  /** A faster reader for the route's usual JSON body: its value, or null to leave the body to JSON.parse. */
  scanJson?: (bytes: Uint8Array) => unknown;
}

const JSON_RULE: BodyRule = { types: ["application/json"], limit: JSON_BODY_LIMIT };

/** JSON routes with a reader of their own, by exact path. */
const SCANNED_JSON_RULES = new Map<string, BodyRule>([
  // The bulk check's usual body is read straight into BulkInputs (see bulk-inputs.ts).
  ["/v1/ip/bulk", { ...JSON_RULE, scanJson: scanBulkBody }],
]);

/** Routes whose body is not JSON, by path prefix. */
const SPECIAL_RULES: { prefix: string; rule: BodyRule }[] = [
  // A feed's list, up to 64 MiB: read only for an administrator.
  { prefix: "/v1/admin/feeds/", rule: { types: ["text/plain"], limit: 64 * 1024 * 1024, readFor: "admin" } },
  // An edge's batch of forwarded reports: up to 1,000 reports with their evidence (contract 18).
  { prefix: "/v1/reports/forwarded", rule: { types: ["application/json"], limit: 32 * 1024 * 1024, readFor: "key" } },
];

export function bodyRuleFor(path: string): BodyRule {
  for (const { prefix, rule } of SPECIAL_RULES) if (path.startsWith(prefix)) return rule;
  return SCANNED_JSON_RULES.get(path) ?? JSON_RULE;
}

/**
 * Reads and parses a request body under its path's rule (bodyRuleFor). Returns undefined for an empty body, a
 * parsed value for JSON (BulkInputs for the common body of a bulk check), a string for text.
 */
export async function readBody(request: Request, rule: BodyRule): Promise<unknown> {
  const bytes = await readLimited(request, rule.limit);
  if (bytes.byteLength === 0) return undefined;
  const mediaType = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (!rule.types.includes(mediaType)) {
    throw new AppError("unsupported_media_type", `The body must be sent as ${rule.types.join(" or ")}`);
  }
  if (mediaType === "application/json") {
    const scanned = rule.scanJson?.(bytes) ?? null;
    if (scanned !== null) return scanned;
    try {
      return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      throw new AppError("bad_request", "The request body is not valid JSON");
    }
  }
  return new TextDecoder().decode(bytes); // text/plain, the only other type a rule takes
}

/** A form body already read (multipart or urlencoded), parsed by the platform's own parser (boundaries, encodings). */
export function formOf(bytes: Uint8Array, contentType: string) {
  return new Request("http://localhost/", { method: "POST", body: bytes, headers: { "content-type": contentType } }).formData();
}

/**
 * The body's bytes, at most `limit` of them: a longer body, or one declared longer, is 413 (payload_too_large),
 * read no further.
 */
export async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (!request.body) return new Uint8Array(0);
  // With a declared length the platform reads the body in one go, faster than pulling chunks; a body without one
  // (chunked) is counted as it arrives.
  if (declared !== null) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > limit) throw tooLarge(limit);
    return bytes;
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

function tooLarge(limit: number): AppError {
  return new AppError("payload_too_large", `The request body is larger than ${Math.round(limit / 1024)} KiB`);
}
