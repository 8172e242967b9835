// GET /metrics (contract section 11) in the Prometheus text format, and the hooks that count every request for
// it. Not counted against a rate limit; open unless `--metrics-token` is set, then it needs that bearer token.

import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { AppError } from "../../domain/errors";
import type { Services } from "../../services/services";
import { requestOutcomes } from "../request-outcomes";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** The request context as these hooks see it: `startedAt` is set on it by the first hook. */
interface Timed {
  request: Request;
  route?: string;
  set: { status?: number | string };
  responseValue?: unknown;
  startedAt?: number;
}

/**
 * Counts every request by method, route template and status class, with its duration. Use it before the app's
 * own onError: its error hook only counts and returns nothing, so the next one still answers.
 */
export function requestMetrics(services: Services) {
  const outcomes = requestOutcomes(services);
  return new Elysia()
    .onRequest((c) => {
      (c as unknown as Timed).startedAt = performance.now();
    })
    .onAfterHandle({ as: "global" }, (context) => {
      const c = context as unknown as Timed;
      const value = c.responseValue;
      // A handler that builds its own Response (blocklists, /metrics) carries its status there, not in `set`.
      const status = value instanceof Response ? value.status : typeof c.set.status === "number" ? c.set.status : 200;
      outcomes.answered(c.request, c.route, status, c.startedAt as number);
    })
    .onError({ as: "global" }, (context) => {
      const c = context as unknown as Timed & { code: string | number; error: unknown };
      const error = outcomes.failed(c.error, c.code);
      outcomes.answered(c.request, c.route, error.status, c.startedAt as number);
    });
}

export function metricsRoutes(services: Services) {
  const metrics = services.metrics;
  const token = services.config.metricsToken;
  // Compared as digests: equal lengths for timingSafeEqual, and no early exit that leaks the token's length.
  const expected = token ? digest(token) : null;
  return new Elysia().get("/metrics", ({ request }) => {
    if (expected !== null) {
      const authorization = request.headers.get("authorization") ?? "";
      const given = /^bearer /i.test(authorization) ? authorization.slice(7).trim() : null;
      if (given === null || !timingSafeEqual(digest(given), expected)) {
        throw new AppError("unauthorized", "GET /metrics needs Authorization: Bearer <metrics token> (the server runs with --metrics-token)");
      }
    }
    return new Response(metrics.render(), { headers: { "content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store" } });
  });
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
