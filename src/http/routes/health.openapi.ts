// The OpenAPI operations of the routes in health.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, json, operation } from "../openapi/schema";

export const healthPaths: Record<string, Record<string, Operation>> = {
  "/healthz": { get: operation("healthz", { tag: "Operations", access: "public", summary: "Liveness", ok: { 200: json("The process answers.", ref("Health")) } }) },
  "/readyz": {
    get: operation("readyz", {
      tag: "Operations",
      access: "public",
      summary: "Readiness: database open and index built",
      ok: { 200: json("Ready.", ref("Readiness")), 503: json("Not ready yet.", ref("Readiness")) },
    }),
  },
};
