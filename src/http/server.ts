// The HTTP listener of `serve`: Bun.serve with the hottest routes (fast-routes.ts) and the AbuseIPDB-compatible
// `/api/v2` (abuseipdb/router.ts) and the CrowdSec bouncer routes (crowdsec/routes.ts) on Bun's own router, and every other request through the Elysia app.

import type { Server } from "bun";
import type { Services } from "../services/services";
import type { App } from "./app";
import { ABUSEIPDB_PREFIX, abuseIpdbRoutes } from "./abuseipdb/router";
import { crowdsecRoutes } from "./crowdsec/routes";
import { fastRoutes } from "./fast-routes";

export function listen(services: Services, app: App, options: { hostname: string; port: number }): Server<undefined> {
  return Bun.serve({
    hostname: options.hostname,
    port: options.port,
    routes: { ...fastRoutes(services), ...crowdsecRoutes(services), [`${ABUSEIPDB_PREFIX}*`]: abuseIpdbRoutes(services) },
    // app.fetch, not app.handle: handle wraps every request in one more async function.
    fetch: (request) => app.fetch(request),
    // Our own body reader enforces per-route limits; this only stops absurd uploads early.
    maxRequestBodySize: 128 * 1024 * 1024,
    error: () => new Response(JSON.stringify({ success: false, error: "Internal server error", code: "internal_error" }), { status: 500 }),
  });
}
