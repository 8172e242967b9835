// `limit`/`offset` query parameters, parsed the same way on every listing: limit 1..100, offset ≥ 0, anything
// else is 400 validation_failed naming the field.

import { validationFailed, type FieldError } from "./errors";

export interface Page {
  limit: number;
  offset: number;
}

export const MAX_PAGE_LIMIT = 100;

export function parsePage(query: Record<string, unknown>, defaults: Page = { limit: 20, offset: 0 }): Page {
  const problems: FieldError[] = [];
  const read = (name: "limit" | "offset", min: number, max: number): number => {
    const raw = query[name];
    if (raw === undefined) return defaults[name];
    if (typeof raw !== "string" || !/^\d{1,15}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push({ field: name, message: max === Number.MAX_SAFE_INTEGER ? `must be an integer of at least ${min}` : `must be an integer from ${min} to ${max}` });
      return defaults[name];
    }
    return Number(raw);
  };
  const page = { limit: read("limit", 1, MAX_PAGE_LIMIT), offset: read("offset", 0, Number.MAX_SAFE_INTEGER) };
  if (problems.length > 0) throw validationFailed(problems, `Invalid query: ${problems.map((p) => `${p.field} ${p.message}`).join("; ")}`);
  return page;
}
