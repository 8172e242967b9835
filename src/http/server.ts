// The HTTP listener of `serve`: Bun.serve with the hottest routes (fast-routes.ts), the AbuseIPDB-compatible
// `/api/v2` (abuseipdb/router.ts) and the CrowdSec bouncer routes (crowdsec/routes.ts) on Bun's own router, and
// every other request through the Elysia app. An edge swaps what it serves with `server.reload` (no request
// dropped): `handlerOptions` is what both the first start and a swap give Bun.

import type { Server } from "bun";
import type { Services } from "../services/services";
import type { App } from "./app";
import { ABUSEIPDB_PREFIX, abuseIpdbRoutes } from "./abuseipdb/router";
import { consoleRoutes } from "./console/router";
import { crowdsecRoutes } from "./crowdsec/routes";
import { fastRoutes } from "./fast-routes";

const INTERNAL_ERROR = () => new Response(JSON.stringify({ success: false, error: "Internal server error", code: "internal_error" }), { status: 500 });

/**
 * Admin requests that answer when their work is done (a job run, a feed added, refreshed, imported or removed): Bun.serve
 * cuts a request off once nothing has been sent for its idle timeout (10 s), and a snapshot job at 1 M addresses
 * takes longer. The idle timeout resets on every byte received anyway, so it is no defence against a slow
 * client: these requests simply have none.
 */
const RUNS_UNTIL_DONE = /^\/(v1\/admin\/(jobs\/[^/]+\/run|feeds(\/[^/]+(\/refresh)?)?)|console\/admin\/(jobs\/run|feeds\/(refresh|remove)))\/?$/;

/** Lifts the idle timeout of a request that runs until its work is done (RUNS_UNTIL_DONE). */
function keepOpenUntilDone(request: Request, server: Server<undefined>): void {
  // DELETE: a feed's removal runs in steps too (DELETE /v1/admin/feeds/{name}, or the name in the body).
  if (request.method !== "POST" && request.method !== "DELETE") return;
  const url = request.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2)).split("?")[0];
  if (RUNS_UNTIL_DONE.test(path)) server.timeout(request, 0);
}

/** The routes and fallback handler that serve `services` through `app`. */
export function handlerOptions(services: Services, app: App, extraRoutes: Record<string, (request: Request) => Response | Promise<Response>> = {}) {
  const consolePages = consoleRoutes(services);
  const consoleFallback = consolePages["/console/*"];
  return {
    routes: {
      ...fastRoutes(services),
      ...crowdsecRoutes(services),
      [`${ABUSEIPDB_PREFIX}*`]: abuseIpdbRoutes(services),
      ...consolePages,
      "/console/*": (request: Request, server: Server<undefined>) => {
        keepOpenUntilDone(request, server);
        return consoleFallback(request);
      },
      ...extraRoutes,
    },
    // app.fetch, not app.handle: handle wraps every request in one more async function.
    fetch: (request: Request, server: Server<undefined>) => {
      keepOpenUntilDone(request, server);
      return app.fetch(request);
    },
    error: INTERNAL_ERROR,
  };
}

/** The URL a listener answers on, for the start line: an IPv6 address in brackets (`http://[::1]:8080`). */
export function listeningUrl(server: Pick<Server<undefined>, "hostname" | "port">): string {
  const host = server.hostname ?? "localhost";
  return `http://${host.includes(":") ? `[${host}]` : host}:${server.port}`;
}

export function listen(services: Services, app: App, options: { hostname: string; port: number; idleTimeoutSeconds?: number }): Server<undefined> {
  return Bun.serve({
    hostname: options.hostname,
    port: options.port,
    // Bun's default (10 s) unless a test asks for a shorter one.
    ...(options.idleTimeoutSeconds === undefined ? {} : { idleTimeout: options.idleTimeoutSeconds }),
    ...handlerOptions(services, app),
    // Our own body reader enforces per-route limits; this only stops absurd uploads early.
    maxRequestBodySize: 128 * 1024 * 1024,
  });
}
