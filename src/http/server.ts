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

/** The routes and fallback handler that serve `services` through `app`. */
export function handlerOptions(services: Services, app: App, extraRoutes: Record<string, (request: Request) => Response | Promise<Response>> = {}) {
  return {
    routes: { ...fastRoutes(services), ...crowdsecRoutes(services), [`${ABUSEIPDB_PREFIX}*`]: abuseIpdbRoutes(services), ...consoleRoutes(services), ...extraRoutes },
    // app.fetch, not app.handle: handle wraps every request in one more async function.
    fetch: (request: Request) => app.fetch(request),
    error: INTERNAL_ERROR,
  };
}

/** The URL a listener answers on, for the start line: an IPv6 address in brackets (`http://[::1]:8080`). */
export function listeningUrl(server: Pick<Server<undefined>, "hostname" | "port">): string {
  const host = server.hostname ?? "localhost";
  return `http://${host.includes(":") ? `[${host}]` : host}:${server.port}`;
}

export function listen(services: Services, app: App, options: { hostname: string; port: number }): Server<undefined> {
  const server = Bun.serve({
    hostname: options.hostname,
    port: options.port,
    ...handlerOptions(services, app),
    // Our own body reader enforces per-route limits; this only stops absurd uploads early.
    maxRequestBodySize: 128 * 1024 * 1024,
  });
  // Elysia's context.server is the app's: a route that outlives the idle timeout (a feed change in steps,
  // routes/feeds.ts) lifts it for its own request through it.
  (app as unknown as { server: Server<undefined> | null }).server = server;
  return server;
}
