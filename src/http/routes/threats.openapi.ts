// The OpenAPI operations of the routes in threats.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, paged, json, operation, pageParams } from "../openapi/schema";

export const threatsPaths: Record<string, Record<string, Operation>> = {
  "/v1/threats": {
    get: operation("threats", {
      tag: "Lookups",
      access: "key",
      summary: "Detected threat patterns, newest first",
      description: "`subnet_burst`: at least 5 distinct addresses of one /24 (/64) reported within 60 minutes; `category_campaign`: one category against at least 20 addresses of one ASN within 60 minutes.",
      params: pageParams(20),
      ok: { 200: json("The threats.", paged(ref("Threat"))) },
      errors: [400],
    }),
  },
};
