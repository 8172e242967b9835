// The hottest routes, `GET /v1/ip/{ip}/reputation`, `POST /v1/ip/bulk` and `GET /v1/ip/blocklist` (firewalls
// poll it, mostly for a 304), served by Bun's own router ahead of
// Elysia, and only here: without the framework's per-request work (routing, context, hooks), which costs as much
// as a cached lookup itself (measured: 0.59 -> 0.71 of a raw Bun.serve for the lookup; for the bulk check it is
// a tenth of its time). Everything else goes through the Elysia app. The answers use the functions the app's
// routes use (readBody, authenticate, takeRequest, jsonResponder), in the app's order (body, then credential);
// what this adds is what the app's hooks would do: the error body, the metrics and the access log.

import type { Services } from "../services/services";
import type { Principal } from "../domain/principal";
import { authenticate, jsonResponder, setRateLimitHeaders, takeRequest } from "./auth";
import { bodyRuleFor, readBody } from "./body";
import { errorResponse } from "./errors";
import { requestOutcomes } from "./request-outcomes";
import { bulkInputsOf, pathAddress } from "./routes/lookups";
import { blocklistHeaders, paramsOf } from "./routes/blocklist";

const REPUTATION_ROUTE = "/v1/ip/:ip/reputation";
const BULK_ROUTE = "/v1/ip/bulk";
const BULK_BODY = bodyRuleFor(BULK_ROUTE);
const BLOCKLIST_ROUTE = "/v1/ip/blocklist";
/** The routes served here and nowhere else, for the OpenAPI check. */
export const FAST_ROUTES: readonly [method: string, path: string][] = [
  ["GET", REPUTATION_ROUTE],
  ["POST", BULK_ROUTE],
  ["GET", BLOCKLIST_ROUTE],
];

type RouteRequest = Request & { params: Record<string, string> };

export function fastRoutes(services: Services) {
  const respond = jsonResponder(services);
  const outcomes = requestOutcomes(services);
  const { reputation, blocklists } = services;

  /** The answers of the routes, made once: each takes the counted request's principal, what is left, its input. */
  type Answer<I> = (principal: Principal, remaining: number | null, input: I) => Response;
  const reputationAnswer: Answer<string> = (principal, remaining, ip) => respond(principal, remaining, reputation.reputationBody(pathAddress(ip)));
  const bulkAnswer: Answer<unknown> = (principal, remaining, body) => respond(principal, remaining, reputation.bulkBody(bulkInputsOf(body)));
  /**
   * A blocklist, or a 304 when the client's ETag is current. A list not cached at the index's current state is
   * selected in steps between other requests (BlocklistService.answerInTurns), after the credential was checked.
   */
  async function blocklistServed(request: Request): Promise<Response> {
    const started = performance.now();
    let principal: Principal | null = null;
    let remaining: number | null = null;
    const headers: Record<string, string> = {};
    let response: Response;
    try {
      principal = authenticate(services, request, "key");
      remaining = takeRequest(services, principal);
      if (remaining !== null) setRateLimitHeaders(services, principal, remaining, headers);
      const answer = await blocklists.answerInTurns(paramsOf(request.url), request.headers.get("if-none-match"));
      response = new Response(answer.status === 304 ? null : answer.body, { status: answer.status, headers: blocklistHeaders(answer, headers) });
    } catch (error) {
      response = errorResponse(outcomes.failed(error), headers);
    }
    outcomes.answered(request, BLOCKLIST_ROUTE, response.status, started);
    return response;
  }

  /**
   * The answer for a counted request, or the contract's error body for what was thrown (with the rate-limit
   * headers once the request was counted); counted and logged. An `input` that is an Error is what reading the
   * request threw: answered before any credential is looked at. No closure or header bag per request.
   */
  function served<I>(route: string, request: Request, started: number, input: I | Error, answer: Answer<I>): Response {
    let principal: Principal | null = null;
    let remaining: number | null = null;
    let response: Response;
    try {
      if (input instanceof Error) throw input;
      principal = authenticate(services, request, "key");
      remaining = takeRequest(services, principal);
      response = answer(principal, remaining, input);
    } catch (error) {
      const headers: Record<string, string> = {};
      if (principal !== null && remaining !== null) setRateLimitHeaders(services, principal, remaining, headers);
      response = errorResponse(outcomes.failed(error), headers);
    }
    outcomes.answered(request, route, response.status, started);
    return response;
  }

  return {
    // GET only (Bun answers HEAD with it): a route given as a bare function takes every method.
    [BLOCKLIST_ROUTE]: { GET: blocklistServed },
    [REPUTATION_ROUTE]: { GET: (request: RouteRequest) => served(REPUTATION_ROUTE, request, performance.now(), request.params.ip, reputationAnswer) },
    [BULK_ROUTE]: {
      POST: async (request: Request) => {
        const started = performance.now();
        let body: unknown;
        try {
          body = await readBody(request, BULK_BODY);
        } catch (error) {
          body = error;
        }
        return served(BULK_ROUTE, request, started, body, bulkAnswer);
      },
    },
  };
}
