// The parameters of an `/api/v2` request as AbuseIPDB clients send them (contract 13): the query string and the
// body (form-encoded, multipart or JSON) merged, the body winning; unknown parameters ignored; flags on when
// present with any value but `false` or `0`.

import { AppError } from "../../domain/errors";
import { ParameterError } from "../../services/abuseipdb/wire";
import { formOf, readLimited } from "../body";

/** Bodies above this are refused with 413 (a bulk-report of 10,000 lines with long comments fits well inside). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

export class BodyTooLarge extends Error {}
export class UnreadableBody extends Error {}

export type Params = Map<string, string>;

export async function readParams(request: Request, url: URL): Promise<Params> {
  const params: Params = new Map();
  for (const [key, value] of url.searchParams) params.set(key, value);
  if (request.method === "GET" || request.method === "HEAD" || request.body === null) return params;
  // Read whole under the limit before any parser sees it: a chunked body declares no length, and the platform's
  // parsers read whatever arrives, up to the listener's own limit (128 MiB).
  const bytes = await readLimited(request, MAX_BODY_BYTES).catch((error) => {
    throw error instanceof AppError && error.errorCode === "payload_too_large" ? new BodyTooLarge() : new UnreadableBody();
  });
  const type = request.headers.get("content-type") ?? "";
  const mediaType = type.toLowerCase();
  try {
    if (mediaType.startsWith("application/json")) {
      const text = new TextDecoder().decode(bytes);
      if (text.trim() === "") return params;
      const body: unknown = JSON.parse(text);
      if (typeof body !== "object" || body === null || Array.isArray(body)) throw new UnreadableBody();
      for (const [key, value] of Object.entries(body)) {
        if (value === null || value === undefined) continue;
        params.set(key, Array.isArray(value) ? value.join(",") : String(value));
      }
    } else if (mediaType.startsWith("multipart/form-data") || mediaType.startsWith("application/x-www-form-urlencoded")) {
      const form = await formOf(bytes, type);
      for (const [key, value] of form) params.set(key, typeof value === "string" ? value : await value.text());
    } else {
      // No type (or another): a form-encoded body is what curl sends with -d; read it as that when it parses.
      for (const [key, value] of new URLSearchParams(new TextDecoder().decode(bytes))) params.set(key, value);
    }
  } catch {
    throw new UnreadableBody();
  }
  return params;
}

/** A flag: on when present with any value except `false` or `0`. */
export function flag(params: Params, name: string): boolean {
  const value = params.get(name);
  return value !== undefined && value !== "false" && value !== "0";
}

/** An integer parameter within [min, max], or `fallback` when absent or empty. */
export function integer(params: Params, name: string, min: number, max: number, fallback: number): number {
  const value = params.get(name);
  if (value === undefined || value === "") return fallback;
  const text = value.trim();
  if (!/^\d{1,12}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ParameterError(name, `The ${name} must be an integer between ${min} and ${max}.`);
  }
  return Number(text);
}

/** A required parameter's text. */
export function required(params: Params, name: string): string {
  const value = params.get(name);
  if (value === undefined || value.trim() === "") throw new ParameterError(name, `The ${name} field is required.`);
  return value;
}
