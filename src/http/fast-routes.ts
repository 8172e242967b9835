// The hottest route, `GET /v1/ip/{ip}/reputation`, served by Bun's own router ahead of Elysia: same answer,
// same errors, same counting, without the framework's per-request work (routing, context, hooks), which costs
// as much as the lookup itself (measured: 0.59 -> 0.71 of a raw Bun.serve). Everything else goes through the
// Elysia app. The answer is built by the same functions the Elysia route uses (authenticate, takeRequest,
// jsonAnswerer, reputationBody), so the two cannot drift; what this adds is what the app's hooks would do: the
// error body, the metrics and the access log. test/http/server.test.ts compares the two.

import type { Services } from "../services/services";
import { metricsOf } from "../services/metrics";
import { authenticate, jsonAnswerer, takeRequest } from "./auth";
import { errorResponse, toAppError } from "./errors";
import { pathAddress } from "./routes/lookups";
import { accessLogOf } from "./routes/metrics";

const ROUTE = "/v1/ip/:ip/reputation";

export function fastRoutes(services: Services): Record<string, (request: Request & { params: Record<string, string> }) => Response> {
  const answer = jsonAnswerer(services);
  const counters = metricsOf(services).requests;
  const log = accessLogOf(services);
  const { reputation } = services;
  return {
    [ROUTE]: (request) => {
      const started = performance.now();
      const set = { headers: {} as Record<string, string | number> };
      let response: Response;
      try {
        const principal = authenticate(services, request, "key");
        const remaining = takeRequest(services, principal);
        response = answer(principal, remaining, set, () => reputation.reputationBody(pathAddress(request.params.ip)));
      } catch (error) {
        const appError = toAppError("UNKNOWN", error);
        if (appError.errorCode === "internal_error") console.error("internal error:", error);
        counters.recordError(appError.errorCode);
        response = errorResponse(appError, stringHeaders(set.headers));
      }
      const seconds = (performance.now() - started) / 1000;
      counters.record("GET", ROUTE, response.status, seconds);
      log?.(request, response.status, seconds);
      return response;
    },
  };
}

function stringHeaders(headers: Record<string, string | number>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = String(v);
  return out;
}
