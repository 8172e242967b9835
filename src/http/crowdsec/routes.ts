// The routes of CrowdSec's Local API that a firewall bouncer uses (contract 14), on Bun's router ahead of the
// Elysia app: LAPI's own wire format (a 403 `{"message":"access forbidden"}` for a bad key), `X-Api-Key` auth, and
// pulls that do not count against the daily budget (a bouncer polls every 10 seconds).

import type { Server } from "bun";
import type { Cidr, Ip } from "../../domain/ip";
import { tryParseCidr, tryParseIp } from "../../domain/ip";
import type { Principal } from "../../domain/principal";
import type { PullOptions } from "../../services/bouncers/bouncers";
import type { Services } from "../../services/services";
import { JSON_BODY_LIMIT, readLimited } from "../body";
import { requestOutcomes } from "../request-outcomes";

export const DECISIONS_STREAM_ROUTE = "/v1/decisions/stream";
export const DECISIONS_ROUTE = "/v1/decisions";
export const USAGE_METRICS_ROUTE = "/v1/usage-metrics";
/** What each route answers, for the OpenAPI check. */
export const CROWDSEC_ENDPOINTS: Readonly<Record<string, readonly string[]>> = {
  [DECISIONS_STREAM_ROUTE]: ["GET", "HEAD"],
  [DECISIONS_ROUTE]: ["GET"],
  [USAGE_METRICS_ROUTE]: ["POST"],
};

const JSON_HEADERS = { "content-type": "application/json" };
const forbidden = () => new Response('{"message":"access forbidden"}', { status: 403, headers: JSON_HEADERS });
const badRequest = (message: string) => new Response(JSON.stringify({ message }), { status: 400, headers: JSON_HEADERS });

const list = (value: string | null): string[] =>
  value === null ? [] : value.split(",").map((s) => s.trim()).filter((s) => s !== "");

export function crowdsecRoutes(services: Services) {
  const outcomes = requestOutcomes(services);

  function principalOf(request: Request): Principal | null {
    const key = request.headers.get("x-api-key");
    return key === null || key.trim() === "" ? null : services.credentials.byDecisionsKey(key.trim());
  }

  /** Counts and logs an answer; an unexpected failure becomes LAPI's 500 body, never a stack. */
  function served(route: string, request: Request, answer: () => Response): Response {
    const started = performance.now();
    let response: Response;
    try {
      response = answer();
    } catch (error) {
      outcomes.failed(error);
      response = new Response('{"message":"internal error"}', { status: 500, headers: JSON_HEADERS });
    }
    outcomes.answered(request, route, response.status, started);
    return response;
  }

  /**
   * `served`, once the key's list is current: when it must be computed whole (after a start, an allowlist or
   * network change), that is done in steps between other requests first (Bouncers.listReady).
   */
  function servedWhenListed(route: string, request: Request, answer: () => Response): Response | Promise<Response> {
    const principal = principalOf(request);
    const ready = principal === null ? null : services.bouncers.listReady(principal);
    if (ready === null) return served(route, request, answer);
    const serve = () => served(route, request, answer);
    return ready.then(serve, serve);
  }

  return {
    [DECISIONS_STREAM_ROUTE]: {
      GET: (request: Request, server: Server<undefined>) =>
        servedWhenListed(DECISIONS_STREAM_ROUTE, request, () => {
          const principal = principalOf(request);
          if (principal === null) return forbidden();
          const query = new URL(request.url).searchParams;
          const scopes = new Set(list(query.get("scopes") ?? "ip,range").map((s) => s.toLowerCase()));
          const options: PullOptions = {
            startup: (query.get("startup") ?? "").toLowerCase() === "true",
            scopes: scopes.size === 0 ? new Set(["ip", "range"]) : scopes,
            scenariosContaining: list(query.get("scenarios_containing")),
            scenariosNotContaining: list(query.get("scenarios_not_containing")),
          };
          const client = server.requestIP(request)?.address ?? "unknown";
          return new Response(services.bouncers.pull(principal, client, options), { headers: JSON_HEADERS });
        }),
      HEAD: (request: Request) =>
        served(DECISIONS_STREAM_ROUTE, request, () => (principalOf(request) === null ? forbidden() : new Response(null, { status: 200, headers: JSON_HEADERS }))),
    },
    [DECISIONS_ROUTE]: {
      GET: (request: Request) =>
        servedWhenListed(DECISIONS_ROUTE, request, () => {
          const principal = principalOf(request);
          if (principal === null) return forbidden();
          const query = new URL(request.url).searchParams;
          const ipText = query.get("ip");
          const rangeText = query.get("range");
          let key: Ip | Cidr;
          if (ipText !== null) {
            const ip = tryParseIp(ipText);
            if (typeof ip === "string") return badRequest(`ip: ${ip}`);
            key = ip;
          } else if (rangeText !== null) {
            const cidr = tryParseCidr(rangeText);
            if (typeof cidr === "string") return badRequest(`range: ${cidr}`);
            key = cidr;
          } else {
            return badRequest("give ip=ADDRESS or range=CIDR");
          }
          return new Response(services.bouncers.decisionsAround(principal, key) ?? "null", { headers: JSON_HEADERS });
        }),
    },
    [USAGE_METRICS_ROUTE]: {
      POST: async (request: Request) => {
        // The key first: a stranger's body is not read at all. A bouncer's (its counters) is read up to the
        // contract's 64 KiB and dropped: only that it came is kept, for `bouncer list`.
        const principal = principalOf(request);
        const fits = principal !== null && (await readLimited(request, JSON_BODY_LIMIT).then(() => true, () => false));
        return served(USAGE_METRICS_ROUTE, request, () => {
          if (principal === null) return forbidden();
          if (!fits) return new Response(JSON.stringify({ message: `body larger than ${JSON_BODY_LIMIT / 1024} KiB` }), { status: 413, headers: JSON_HEADERS });
          services.bouncers.noteUsageMetrics(principal);
          return new Response("{}", { status: 201, headers: JSON_HEADERS });
        });
      },
    },
  };
}
