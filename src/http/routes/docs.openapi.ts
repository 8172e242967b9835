// The OpenAPI operations of the routes in docs.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, str, json, operation } from "../openapi/schema";

export const docsPaths: Record<string, Record<string, Operation>> = {
  "/v1/openapi.json": {
    get: operation("openapi", { tag: "Operations", access: "public", summary: "This OpenAPI 3.1 document", ok: { 200: json("The document.", { type: "object" }) } }),
  },
  "/docs": {
    get: operation("docs", {
      tag: "Operations",
      access: "public",
      summary: "The API documentation page",
      description: "A self-contained HTML page that renders this document; it needs no internet access.",
      ok: { 200: { description: "HTML.", content: { "text/html": { schema: str() } } } },
    }),
  },
};
