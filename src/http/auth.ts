// Authentication, authorization and request counting for every /v1 route, as Elysia macros: a route declares
// `{ auth: "key" | "user" | "admin" }` and its handler receives `principal`. This runs on the lookup hot path: no
// SQL, two header reads, one hash and one map lookup for an API key. The hottest routes (lookups) declare
// `{ authOwnHeaders: … }` instead and answer with `jsonAnswerer`'s answer: one Response with every header.

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

/**
 * Counts a request against its account's budget: the requests left after it, or null for an unlimited account
 * (not counted, no headers: contract section 4). Throws the 429 when the budget is spent.
 */
export function takeRequest(services: Services, principal: Principal): number | null {
  const budget = principal.dailyBudget;
  if (budget === null) return null;
  const limiter = services.rateLimiter;
  const remaining = limiter.take(principal.userId, budget);
  if (remaining < 0) throw limiter.limitedError(budget);
  return remaining;
}

/** Counts a request against its account's budget; sets the three headers, or throws the 429. */
export function countRequest(services: Services, principal: Principal, headers: Record<string, string | number>): void {
  const remaining = takeRequest(services, principal);
  if (remaining !== null) setRateLimitHeaders(services, principal, remaining, headers);
}

export function setRateLimitHeaders(services: Services, principal: Principal, remaining: number, headers: Record<string, string | number>): void {
  // Strings, as Response headers need them: a header bag filled here goes to `new Response` as it is.
  headers["x-ratelimit-limit"] = String(principal.dailyBudget);
  headers["x-ratelimit-remaining"] = String(remaining);
  headers["x-ratelimit-reset"] = services.rateLimiter.resetHeaderOfLastTake();
}

const JSON_TYPE = "application/json;charset=utf-8";
const PLAIN_JSON: ResponseInit = { headers: { "content-type": JSON_TYPE } };

/** Answers a request counted by `authOwnHeaders`: see `jsonAnswerer`. */
export type JsonAnswer = (
  principal: Principal,
  remaining: number | null,
  set: { headers: Record<string, string | number> },
  body: () => string | Uint8Array,
) => Response;

/** A JSON body (text, or UTF-8 bytes) in one Response with the X-RateLimit-* headers of `remaining`. */
export type JsonResponder = (principal: Principal, remaining: number | null, content: string | Uint8Array) => Response;

/**
 * The answer of routes declaring `authOwnHeaders`: given the request's `principal`, `remaining` and `set`, the
 * JSON `body()` makes (text, or UTF-8 bytes) with the X-RateLimit-* headers, in one Response (see jsonResponder).
 * If `body` throws, the headers go on the error response instead, as with `auth`.
 */
export function jsonAnswerer(services: Services): JsonAnswer {
  const respond = jsonResponder(services);
  return (principal, remaining, set, body) => {
    let content: string | Uint8Array;
    try {
      content = body();
    } catch (error) {
      if (remaining !== null) setRateLimitHeaders(services, principal, remaining, set.headers);
      throw error;
    }
    return respond(principal, remaining, content);
  };
}

/**
 * jsonAnswerer's Response for content already made, for a route that puts the headers on its own error answers.
 * The headers that stay the same all day (type, limit, reset) are kept per budget, so each answer copies them
 * and sets one.
 */
export function jsonResponder(services: Services): JsonResponder {
  const limiter = services.rateLimiter;
  /** Header templates by budget, for the day of `reset`. */
  const templates = new Map<number, Headers>();
  let reset = "";
  function templateOf(budget: number): Headers {
    const today = limiter.resetHeaderOfLastTake();
    if (today !== reset) {
      templates.clear();
      reset = today;
    }
    let headers = templates.get(budget);
    if (headers === undefined) {
      headers = new Headers({ "content-type": JSON_TYPE, "x-ratelimit-limit": String(budget), "x-ratelimit-reset": reset });
      templates.set(budget, headers);
    }
    return headers;
  }
  return (principal, remaining, content) => {
    if (remaining === null) return new Response(content, PLAIN_JSON);
    const response = new Response(content, { headers: templateOf(principal.dailyBudget as number) });
    response.headers.set("x-ratelimit-remaining", String(remaining));
    return response;
  };
}

/**
 * The principal behind a request's credential, checked against the level the route needs; throws 401 or 403.
 * `Authorization: Bearer` wins over `X-API-Key` when both are sent.
 */
export function authenticate(services: Services, request: Request, level: AuthLevel): Principal {
  const credentials = services.credentials;
  const headers = request.headers;
  let principal: Principal | null;
  const authorization = headers.get("authorization");
  if (authorization !== null && authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === "bearer ") {
    principal = credentials.byBearer(authorization.slice(7).trim());
  } else {
    const key = headers.get("x-api-key");
    if (key === null) throw new AppError("unauthorized", MISSING);
    principal = credentials.byApiKey(hasOuterSpace(key) ? key.trim() : key);
  }
  if (principal === null) throw new AppError("unauthorized", INVALID);
  if (level !== "key") {
    if (principal.via !== "jwt") throw new AppError("unauthorized", NEEDS_USER_TOKEN);
    if (level === "admin" && principal.role !== "admin") throw new AppError("forbidden", NEEDS_ADMIN);
  }
  return principal;
}

/**
 * Whether `trim()` might change the text: it starts or ends with a control, space or non-ASCII character. Checked
 * first because trim makes a new string, and keys are sent without spaces.
 */
function hasOuterSpace(text: string): boolean {
  if (text.length === 0) return false;
  const first = text.charCodeAt(0);
  const last = text.charCodeAt(text.length - 1);
  return first <= 32 || first >= 127 || last <= 32 || last >= 127;
}

let instances = 0;

/** The auth plugin of one app, made once by createApp and handed to each route module. */
export type AuthPlugin = ReturnType<typeof authPlugin>;

/**
 * The auth plugin of one instance: `.use(auth)` in a route module, then
 * `.get(path, ({ principal }) => ..., { auth: "key" })`. Every authenticated request counts 1 against the
 * owner's daily budget and carries the X-RateLimit-* headers.
 */
export function authPlugin(services: Services) {
  return buildAuthPlugin(services, ++instances);
}

function buildAuthPlugin(services: Services, instance: number) {
  // The seed keeps plugins of different instances (several test harnesses in one process) apart.
  return new Elysia({ name: "auth", seed: instance }).macro({
    // Synchronous on purpose (Elysia then does not await them): authentication never waits for anything.
    auth: (level: AuthLevel) => ({
      resolve({ request, set }) {
        const principal = authenticate(services, request, level);
        countRequest(services, principal, set.headers as Record<string, string | number>);
        return { principal };
      },
    }),
    /**
     * `auth` for routes that answer with `jsonAnswerer`: authenticated and counted the same, but the X-RateLimit-*
     * headers are left to the answer (`remaining`), because headers merged into a finished Response cost more
     * than the lookup itself.
     */
    authOwnHeaders: (level: AuthLevel) => ({
      resolve({ request }) {
        const principal = authenticate(services, request, level);
        const remaining = takeRequest(services, principal);
        return { principal, remaining };
      },
    }),
  });
}
