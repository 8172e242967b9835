// The OpenAPI operations of the routes in metrics.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, str, operation } from "../openapi/schema";
import { responses } from "../openapi/components";

export const metricsPaths: Record<string, Record<string, Operation>> = {
  "/metrics": {
    get: operation("metrics", {
      tag: "Operations",
      access: "metrics",
      summary: "Prometheus metrics",
      description:
        "Prometheus text format 0.0.4. Requests by method, route template and status class " +
        "(`abuse_intel_http_requests_total`) with a duration histogram (`abuse_intel_http_request_duration_seconds`); " +
        "error responses by code and rate-limited responses; reports accepted; webhook deliveries by outcome and attempts; " +
        "index size by family and its generation; scheduled jobs' last run, duration and failure; process memory, CPU and uptime.",
      ok: { 200: { description: "The metrics.", content: { "text/plain; version=0.0.4": { schema: str() } } } },
    }),
  },
};
