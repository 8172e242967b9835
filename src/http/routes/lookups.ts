// Lookups for anyone with a key (contract 5.1, 5.2, 5.3, 5.7, 5.8, 5.9): served from the in-memory index and
// the enrichment table. The address in the path is parsed here, by hand, because this is the hot path.

import { Elysia } from "elysia";
import { BulkInputs } from "../../domain/bulk-inputs";
import { abuseIpdbNumbersMappedTo, CATEGORY_INFO } from "../../domain/categories";
import { AppError, validationFailed } from "../../domain/errors";
import { encodeRecentCursor, parseRecentCursor } from "../../domain/recent-cursor";
import { tryParseIp, type Ip } from "../../domain/ip";
import { parsePage } from "../../domain/pagination";
import { scoringParametersView } from "../../domain/scoring";
import type { Services } from "../../services/services";
import { jsonAnswerer, type AuthPlugin } from "../auth";

export const BULK_LIMIT = 100;

/**
 * The address of a path parameter, which the router has already percent-decoded (Bun's and Elysia's both do):
 * decoding it again made `fe80::1%2541`, a refused zone id sent correctly encoded, the address `fe80::1a`.
 */
export function pathAddress(raw: string | null | undefined): Ip {
  // Elysia hands over null when the path's percent-encoding cannot be decoded.
  if (typeof raw !== "string") throw new AppError("bad_request", "The address in the path is not valid percent-encoding");
  const ip = tryParseIp(raw);
  if (typeof ip === "string") throw new AppError("bad_request", `"${raw}" is not a valid IP address: ${ip}`);
  return ip;
}

/**
 * The addresses of a bulk check's parsed body: BulkInputs already when the body parser read the common form
 * (see bulk-inputs.ts), else the `ips` array of the parsed JSON. Throws 400 validation_failed unless there are
 * 1 to 100 strings.
 */
export function bulkInputsOf(body: unknown): BulkInputs {
  const ips = body instanceof BulkInputs ? body : (body as { ips?: unknown } | undefined)?.ips;
  // `invalid` is for address strings that are not addresses; anything but a string breaks the contract (5.9).
  const notString = Array.isArray(ips) ? ips.findIndex((v) => typeof v !== "string") : -1;
  if (notString >= 0) {
    throw new AppError("validation_failed", `ips must be an array of 1 to ${BULK_LIMIT} strings: ips[${notString}] is ${jsonTypeOf((ips as unknown[])[notString])}`, {
      details: [{ field: `ips[${notString}]`, message: "must be a string" }],
    });
  }
  const inputs = Array.isArray(ips) ? BulkInputs.of(ips) : ips;
  if (!(inputs instanceof BulkInputs) || inputs.count === 0 || inputs.count > BULK_LIMIT) {
    throw new AppError("validation_failed", `ips must be an array of 1 to ${BULK_LIMIT} addresses`, {
      details: [{ field: "ips", message: `must be an array of 1 to ${BULK_LIMIT} strings` }],
    });
  }
  return inputs;
}

function jsonTypeOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `a ${typeof value}`;
}

export function lookupRoutes(services: Services, auth: AuthPlugin) {
  const { reputation } = services;
  const answer = jsonAnswerer(services);
  const categories = CATEGORY_INFO.map((c) => ({
    name: c.name,
    description: c.description,
    abuseIpdbCategory: c.abuseIpdbNumber,
    abuseIpdbCategories: abuseIpdbNumbersMappedTo(c.name),
  }));
  return new Elysia()
    .use(auth)
    .get("/v1/categories", () => ({ success: true, data: categories }), { auth: "key" })
    .get("/v1/scoring", () => ({ success: true, data: scoringParametersView(services.scoring) }), { auth: "key" })
    .get(
      "/v1/ip/recent",
      ({ query }) => {
        const { limit, offset } = parsePage(query, { limit: 10, offset: 0 });
        // A cursor (pagination.next of the page before) starts after its row; it replaces the offset.
        const after = query.cursor === undefined ? null : parseRecentCursor(query.cursor);
        if (after !== null && offset !== 0) throw validationFailed([{ field: "offset", message: "must be 0 (or left out) with a cursor" }], "Invalid query: offset with a cursor");
        const { rows, total, next } = reputation.recent(limit, offset, after);
        return { success: true, data: rows, pagination: { limit, offset, total, next: next === null ? null : encodeRecentCursor(next) } };
      },
      { auth: "key" },
    )
    // The hot routes, GET /v1/ip/{ip}/reputation and POST /v1/ip/bulk, are served only by fast-routes.ts.
    .get(
      "/v1/ip/:ip",
      ({ params, principal, remaining, set }) => answer(principal, remaining, set, () => JSON.stringify(reputation.detail(pathAddress(params.ip)))),
      { authOwnHeaders: "key" },
    );
}
