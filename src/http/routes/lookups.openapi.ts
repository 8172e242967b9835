// The OpenAPI operations of the routes in lookups.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, str, array, obj, envelope, json, jsonBody, operation, pageParams, query, TRUE } from "../openapi/schema";

export const lookupsPaths: Record<string, Record<string, Operation>> = {
  "/v1/ip/{ip}": {
    get: operation("ipDetail", {
      tag: "Lookups",
      access: "key",
      summary: "The IP detail record",
      description: "An address never reported gives 200 with `reports: 0`, `threatLevel: \"low\"`.",
      params: ["ip"],
      ok: { 200: json("The record (flat, no `data` envelope).", ref("IpDetail")) },
      errors: [400],
    }),
  },
  "/v1/ip/{ip}/reputation": {
    get: operation("ipReputation", {
      tag: "Lookups",
      access: "key",
      summary: "The reputation of an address",
      params: ["ip"],
      ok: { 200: json("The reputation.", envelope(ref("Reputation"))) },
      errors: [400],
    }),
  },
  "/v1/ip/recent": {
    get: operation("recent", {
      tag: "Lookups",
      access: "key",
      summary: "Recently reported addresses, newest report first",
      params: [
        ...pageParams(10),
        query("cursor", "The `pagination.next` of the page before: the page after it, instead of an offset (which must then be 0).", str()),
      ],
      ok: { 200: json("One row per address.", obj({ success: TRUE, data: array(ref("RecentRow")), pagination: ref("RecentPagination") })) },
      errors: [400],
    }),
  },
  "/v1/ip/bulk": {
    post: operation("bulk", {
      tag: "Lookups",
      access: "key",
      summary: "Check up to 100 addresses at once",
      description: "Counts 1 against the budget however many addresses it holds. Invalid entries are listed, not fatal.",
      body: jsonBody(obj({ ips: array(str(), { minItems: 1, maxItems: 100 }) })),
      ok: { 200: json("Results in request order.", envelope(ref("BulkResult"))) },
    }),
  },
  "/v1/categories": {
    get: operation("categories", { tag: "Lookups", access: "key", summary: "The abuse categories", ok: { 200: json("Every category.", envelope(array(ref("CategoryInfo")))) } }),
  },
  "/v1/scoring": {
    get: operation("scoring", { tag: "Lookups", access: "key", summary: "The scoring parameters in force", ok: { 200: json("The parameters.", envelope(ref("ScoringParameters"))) } }),
  },
};
