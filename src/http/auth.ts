// Authentication, authorization and request counting for every /v1 route, as one Elysia macro: a route
// declares `{ auth: "key" | "user" | "admin" }` and its handler receives `principal`. This runs on the lookup
// hot path: no SQL, two header reads, one hash and one map lookup for an API key.

import { Elysia } from "elysia";
import { AppError } from "../domain/errors";
import type { AuthLevel, Principal } from "../domain/principal";
import type { Services } from "../services/services";

const MISSING = "Authentication required: send an API key in X-API-Key, or Authorization: Bearer <API key or access token>";
const INVALID = "The credential is invalid, expired or revoked";
const NEEDS_USER_TOKEN =
  "This endpoint needs a user access token from POST /v1/auth/login (Authorization: Bearer <token>); an API key is not " +
  "enough, because what it does must be attributed to an account";
const NEEDS_ADMIN = "This endpoint needs an administrator account";

/** Counts a request against its account's budget; sets the three headers, or throws the 429. */
export function countRequest(services: Services, principal: Principal, headers: Record<string, string | number>): void {
  const budget = principal.dailyBudget;
  // Unlimited accounts are not counted and get no headers (contract section 4).
  if (budget === null) return;
  const limiter = services.rateLimiter;
  const remaining = limiter.take(principal.userId, budget);
  if (remaining < 0) throw limiter.limitedError(budget);
  headers["x-ratelimit-limit"] = budget;
  headers["x-ratelimit-remaining"] = remaining;
  headers["x-ratelimit-reset"] = limiter.resetHeader();
}

/**
 * The principal behind a request's credential, checked against the level the route needs; throws 401 or 403.
 * `Authorization: Bearer` wins over `X-API-Key` when both are sent.
 */
export async function authenticate(services: Services, request: Request, level: AuthLevel): Promise<Principal> {
  const credentials = services.credentials;
  let principal: Principal | null;
  const authorization = request.headers.get("authorization");
  if (authorization !== null && authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === "bearer ") {
    principal = await credentials.byBearer(authorization.slice(7).trim());
  } else {
    const key = request.headers.get("x-api-key");
    if (key === null) throw new AppError("unauthorized", MISSING);
    principal = credentials.byApiKey(key.trim());
  }
  if (principal === null) throw new AppError("unauthorized", INVALID);
  if (level !== "key") {
    if (principal.via !== "jwt") throw new AppError("unauthorized", NEEDS_USER_TOKEN);
    if (level === "admin" && principal.role !== "admin") throw new AppError("forbidden", NEEDS_ADMIN);
  }
  return principal;
}

const plugins = new WeakMap<Services, ReturnType<typeof buildAuthPlugin>>();
let instances = 0;

/**
 * The auth plugin of one instance: `.use(authPlugin(services))` in a route module, then
 * `.get(path, ({ principal }) => ..., { auth: "key" })`. Every authenticated request counts 1 against the
 * owner's daily budget and carries the X-RateLimit-* headers.
 */
export function authPlugin(services: Services) {
  let plugin = plugins.get(services);
  if (!plugin) {
    plugin = buildAuthPlugin(services, ++instances);
    plugins.set(services, plugin);
  }
  return plugin;
}

function buildAuthPlugin(services: Services, instance: number) {
  // The seed keeps plugins of different instances (several test harnesses in one process) apart.
  return new Elysia({ name: "auth", seed: instance }).macro({
    auth: (level: AuthLevel) => ({
      async resolve({ request, set }) {
        const principal = await authenticate(services, request, level);
        countRequest(services, principal, set.headers as Record<string, string | number>);
        return { principal };
      },
    }),
  });
}
