// The hottest routes, `GET /v1/ip/{ip}/reputation` and `POST /v1/ip/bulk`, served by Bun's own router ahead of
// Elysia, and only here: without the framework's per-request work (routing, context, hooks), which costs as much
// as a cached lookup itself (measured: 0.59 -> 0.71 of a raw Bun.serve for the lookup; for the bulk check it is
// a tenth of its time). Everything else goes through the Elysia app. The answers use the functions the app's
// routes use (readBody, authenticate, takeRequest, jsonAnswerer), in the app's order (body, then credential);
// what this adds is what the app's hooks would do: the error body, the metrics and the access log.

import type { Services } from "../services/services";
import type { Principal } from "../domain/principal";
import { authenticate, jsonAnswerer, jsonResponder, setRateLimitHeaders, takeRequest } from "./auth";
import { readBody } from "./body";
import { errorResponse } from "./errors";
import { requestOutcomes } from "./request-outcomes";
import { bulkInputsOf, pathAddress } from "./routes/lookups";

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
  const respond = jsonResponder(services);
  const outcomes = requestOutcomes(services);
  const { reputation } = services;

  /** The request answered by `handle`, or the contract's error body for what it threw; counted and logged. */
  function served(route: string, request: Request, started: number, handle: (set: { headers: Record<string, string | number> }) => Response): Response {
    const set = { headers: {} as Record<string, string | number> };
    let response: Response;
    try {
      response = handle(set);
    } catch (error) {
      response = errorResponse(outcomes.failed(error), stringHeaders(set.headers));
    }
    outcomes.answered(request, route, response.status, started);
    return response;
  }

  return {
    // Written out rather than through `served`: no closure or header bag per request on the hottest route.
    [REPUTATION_ROUTE]: (request: RouteRequest) => {
      const started = performance.now();
      let principal: Principal | null = null;
      let remaining: number | null = null;
      let response: Response;
      try {
        principal = authenticate(services, request, "key");
        remaining = takeRequest(services, principal);
        response = respond(principal, remaining, reputation.reputationBody(pathAddress(request.params.ip)));
      } catch (error) {
        const headers: Record<string, string | number> = {};
        if (principal !== null && remaining !== null) setRateLimitHeaders(services, principal, remaining, headers);
        response = errorResponse(outcomes.failed(error), stringHeaders(headers));
      }
      outcomes.answered(request, REPUTATION_ROUTE, response.status, started);
      return response;
    },
    [BULK_ROUTE]: {
      POST: async (request: Request) => {
        const started = performance.now();
        let body: unknown;
        try {
          body = await readBody(request, BULK_ROUTE);
        } catch (error) {
          body = error;
        }
        return served(BULK_ROUTE, request, started, (set) => {
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
