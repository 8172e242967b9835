// The hottest routes, `GET /v1/ip/{ip}/reputation` and `POST /v1/ip/bulk`, served by Bun's own router ahead of
// Elysia, and only here: without the framework's per-request work (routing, context, hooks), which costs as much
// as a cached lookup itself (measured: 0.59 -> 0.71 of a raw Bun.serve for the lookup; for the bulk check it is
// a tenth of its time). Everything else goes through the Elysia app. The answers use the functions the app's
// routes use (readBody, authenticate, takeRequest, jsonAnswerer), in the app's order (body, then credential);
// what this adds is what the app's hooks would do: the error body, the metrics and the access log.

import type { Services } from "../services/services";
import { authenticate, jsonAnswerer, takeRequest } from "./auth";
import { readBody } from "./body";
import { errorResponse, toAppError } from "./errors";
import { bulkInputsOf, pathAddress } from "./routes/lookups";
import { accessLogOf } from "./routes/metrics";

const REPUTATION_ROUTE = "/v1/ip/:ip/reputation";
const BULK_ROUTE = "/v1/ip/bulk";
/** The routes served here and nowhere else, for the OpenAPI check. */
export const FAST_ROUTES: readonly [method: string, path: string][] = [
  ["GET", REPUTATION_ROUTE],
  ["POST", BULK_ROUTE],
];

type RouteRequest = Request & { params: Record<string, string> };

export function fastRoutes(services: Services) {
  const answer = jsonAnswerer(services);
  const counters = services.metrics.requests;
  const log = accessLogOf(services);
  const { reputation } = services;

  /** The request answered by `handle`, or the contract's error body for what it threw; counted and logged. */
  function served(method: string, route: string, request: Request, started: number, handle: (set: { headers: Record<string, string | number> }) => Response): Response {
    const set = { headers: {} as Record<string, string | number> };
    let response: Response;
    try {
      response = handle(set);
    } catch (error) {
      response = failed(error, set);
    }
    const seconds = (performance.now() - started) / 1000;
    counters.record(method, route, response.status, seconds);
    log?.(request, response.status, seconds);
    return response;
  }

  function failed(error: unknown, set: { headers: Record<string, string | number> }): Response {
    const appError = toAppError("UNKNOWN", error);
    if (appError.errorCode === "internal_error") console.error("internal error:", error);
    counters.recordError(appError.errorCode);
    return errorResponse(appError, stringHeaders(set.headers));
  }

  return {
    [REPUTATION_ROUTE]: (request: RouteRequest) =>
      served("GET", REPUTATION_ROUTE, request, performance.now(), (set) => {
        const principal = authenticate(services, request, "key");
        const remaining = takeRequest(services, principal);
        return answer(principal, remaining, set, () => reputation.reputationBody(pathAddress(request.params.ip)));
      }),
    [BULK_ROUTE]: {
      POST: async (request: Request) => {
        const started = performance.now();
        let body: unknown;
        try {
          body = await readBody(request, BULK_ROUTE);
        } catch (error) {
          body = error;
        }
        return served("POST", BULK_ROUTE, request, started, (set) => {
          if (body instanceof Error) throw body;
          const principal = authenticate(services, request, "key");
          const remaining = takeRequest(services, principal);
          return answer(principal, remaining, set, () => reputation.bulkBody(bulkInputsOf(body)));
        });
      },
    },
  };
}

function stringHeaders(headers: Record<string, string | number>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = String(v);
  return out;
}
