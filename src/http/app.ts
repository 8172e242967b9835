// Assembles the HTTP API from one route module per resource. Errors of every route go through one onError;
// bodies through one parser that enforces the contract's media types and size limits.

import { snapshotRoutes } from "./routes/snapshots";
import { authenticate, authPlugin } from "./auth";
import { Elysia } from "elysia";
import type { Services } from "../services/services";
import { errorResponse, toAppError } from "./errors";
import { bodyRuleFor, readBody } from "./body";
import { healthRoutes } from "./routes/health";
import { lookupRoutes } from "./routes/lookups";
import { allowlistRoutes } from "./routes/allowlist";
import { feedRoutes } from "./routes/feeds";
import { authRoutes } from "./routes/auth";
import { keyRoutes } from "./routes/keys";
import { adminUserRoutes } from "./routes/admin-users";
import { reportRoutes } from "./routes/reports";
import { forwardedReportRoutes } from "./routes/forwarded-reports";
import { webhookRoutes } from "./routes/webhooks";
import { jobRoutes } from "./routes/jobs";
import { threatRoutes } from "./routes/threats";
import { metricsRoutes, requestMetrics } from "./routes/metrics";
import { docsRoutes } from "./routes/docs";
import { readOnlyGuard } from "./read-only";

export function createApp(services: Services) {
  // One auth plugin for the whole app, handed to the route modules that need a credential.
  const auth = authPlugin(services);
  return new Elysia()
    // First: its error hook must see an error before the onError below answers it.
    .use(requestMetrics(services))
    // A snapshot server refuses writes (503 read_only) before anything else looks at the request.
    .use(readOnlyGuard(services))
    .onParse({ as: "global" }, ({ request, path }) => {
      // A route taking a large body checks the credential first: nobody else makes the server read 64 MiB.
      const rule = bodyRuleFor(path);
      if (rule.readFor !== undefined) authenticate(services, request, rule.readFor);
      return readBody(request, rule);
    })
    // Counted and logged by requestMetrics' own error hook (request-outcomes.ts); this one only answers.
    .onError({ as: "global" }, ({ code, error }) => errorResponse(toAppError(code, error)))
    .use(healthRoutes(services))
    .use(authRoutes(services, auth))
    .use(keyRoutes(services, auth))
    .use(adminUserRoutes(services, auth))
    .use(reportRoutes(services, auth))
    .use(forwardedReportRoutes(services, auth))
    .use(webhookRoutes(services, auth))
    .use(jobRoutes(services, auth))
    .use(threatRoutes(services, auth))
    .use(lookupRoutes(services, auth))
    .use(allowlistRoutes(services, auth))
    .use(feedRoutes(services, auth))
    .use(snapshotRoutes(services))
    .use(metricsRoutes(services))
    .use(docsRoutes(services));
}

export type App = ReturnType<typeof createApp>;
