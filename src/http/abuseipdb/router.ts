// `/api/v2`: AbuseIPDB's API v2 on the appliance (contract 13), so fail2ban's `abuseipdb` action, Wazuh and the
// client libraries work with only the base URL changed. Served ahead of the Elysia app (as the hot routes are): its
// wire format differs from `/v1` in every answer, errors included, so it owns its parsing, errors and headers.
// Every answer carries X-RateLimit-*; the request counts once against the account's daily budget.

import { AppError } from "../../domain/errors";
import { type Cidr, type Ip, type IpVersion, cidrOf, tryParseIp } from "../../domain/ip";
import type { Principal } from "../../domain/principal";
import { Blacklist, DEFAULT_BLACKLIST_LIMIT, DEFAULT_CONFIDENCE_MINIMUM, MAX_BLACKLIST_LIMIT } from "../../services/abuseipdb/blacklist";
import { AbuseIpdbLookups, indexReportHistory } from "../../services/abuseipdb/check";
import { AbuseIpdbReporting } from "../../services/abuseipdb/reporting";
import { DEFAULT_MAX_AGE_DAYS, MAX_AGE_DAYS, ParameterError } from "../../services/abuseipdb/wire";
import type { Services } from "../../services/services";
import { AddressReports } from "../../store/address-reports";
import { DAY_MS } from "../../domain/scoring";
import { storageError } from "../../store/database";
import { readOnlyRefusal } from "../read-only";
import { type RequestOutcomes, requestOutcomes } from "../request-outcomes";
import { BodyTooLarge, MAX_BODY_BYTES, type Params, UnreadableBody, flag, integer, readParams, required } from "./params";

export const ABUSEIPDB_PREFIX = "/api/v2/";
/** X-RateLimit-Limit and -Remaining of an unlimited account (clients refuse an answer without the headers). */
export const UNLIMITED_RATE_LIMIT = 1_000_000_000;
const AUTH_FAILED = "Authentication failed. Your API key is either missing, incorrect, or revoked.";
/** Widest blocks `check-block` takes. */
const MAX_BLOCK = { 4: 16, 6: 48 } as const;

type Method = "GET" | "POST" | "DELETE";

/** The endpoints and their methods (HEAD answers where GET does). */
export const ABUSEIPDB_ENDPOINTS: Readonly<Record<string, readonly Method[]>> = {
  check: ["GET"],
  reports: ["GET"],
  blacklist: ["GET"],
  report: ["POST"],
  "check-block": ["GET"],
  "bulk-report": ["POST"],
  "clear-address": ["DELETE"],
};
interface Call {
  principal: Principal;
  params: Params;
  url: URL;
  headers: Record<string, string>;
}
type Handler = (call: Call) => Promise<Response> | Response;

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly parameter?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export function abuseIpdbRoutes(services: Services): (request: Request) => Promise<Response> {
  const readOnly = services.config.snapshot !== null;
  // A snapshot carries no reports: the history comes from the index there, and nothing is reported.
  const addressReports = readOnly ? null : new AddressReports(services.store);
  const lookups = new AbuseIpdbLookups({
    reputation: services.reputation,
    index: services.index,
    enrichment: services.enrichment,
    allowlist: services.allowlist,
    reports: addressReports ?? indexReportHistory(services.index),
    clock: services.clock,
  });
  const reporting = addressReports === null ? null : new AbuseIpdbReporting({
    reports: services.reports,
    reputation: services.reputation,
    addressReports,
    scorer: services.scorer,
    addressChanges: services.addressChanges,
    store: services.store,
    clock: services.clock,
    retentionDays: services.config.retentionDays,
  });
  const blacklist = new Blacklist({
    index: services.index,
    allowlist: services.allowlist,
    enrichment: services.enrichment,
    clock: services.clock,
    expireDue: () => services.reputation.expireDue(),
  });
  const outcomes = requestOutcomes(services);

  const routes: Record<string, Partial<Record<Method, Handler>>> = {
    check: {
      GET: ({ params, headers }) => {
        const ip = addressParam(params, "ipAddress");
        return json({ data: lookups.check(ip, maxAge(params), flag(params, "verbose")) }, headers);
      },
    },
    reports: {
      GET: ({ params, url, headers }) => {
        const ip = addressParam(params, "ipAddress");
        const days = maxAge(params);
        const page = integer(params, "page", 1, 1_000_000, 1);
        const perPage = integer(params, "perPage", 1, 100, 25);
        const pageUrl = (n: number) => {
          const next = new URL(url.pathname, url.origin);
          next.searchParams.set("ipAddress", ip.text);
          next.searchParams.set("maxAgeInDays", String(days));
          next.searchParams.set("perPage", String(perPage));
          next.searchParams.set("page", String(n));
          return next.toString();
        };
        return json({ data: lookups.reports(ip, days, page, perPage, pageUrl) }, headers);
      },
    },
    blacklist: {
      GET: async ({ params, headers }) => {
        const ipVersionText = params.get("ipVersion");
        let ipVersion: IpVersion | null = null;
        if (ipVersionText !== undefined && ipVersionText !== "") {
          if (ipVersionText !== "4" && ipVersionText !== "6") throw new ParameterError("ipVersion", "The ipVersion must be 4 or 6.");
          ipVersion = Number(ipVersionText) as IpVersion;
        }
        const plaintext = flag(params, "plaintext");
        const { generatedAt, body } = await blacklist.answerInTurns({
          confidenceMinimum: integer(params, "confidenceMinimum", 25, 100, DEFAULT_CONFIDENCE_MINIMUM),
          limit: integer(params, "limit", 1, MAX_BLACKLIST_LIMIT, DEFAULT_BLACKLIST_LIMIT),
          ipVersion,
          onlyCountries: countries(params, "onlyCountries"),
          exceptCountries: countries(params, "exceptCountries"),
          plaintext,
        });
        if (plaintext) return new Response(body, { headers: { ...headers, "content-type": "text/plain; charset=utf-8", "x-generated-at": generatedAt } });
        return new Response(body, { headers: { ...headers, "content-type": "application/json" } });
      },
    },
    report: {
      POST: async ({ principal, params, headers }) => {
        const data = await reporting!.report(principal, { ip: params.get("ip"), categories: params.get("categories"), comment: params.get("comment"), timestamp: params.get("timestamp") });
        return json({ data }, headers);
      },
    },
    "check-block": {
      GET: ({ params, headers }) => json({ data: lookups.checkBlock(blockParam(params), maxAge(params)) }, headers),
    },
    "bulk-report": {
      POST: async ({ principal, params, headers }) => {
        const csv = params.get("csv");
        if (csv === undefined) throw new ParameterError("csv", "The csv field is required: a file of IP,Categories,ReportDate,Comment lines.");
        return json({ data: await reporting!.bulkReport(principal, csv) }, headers);
      },
    },
    "clear-address": {
      DELETE: ({ principal, params, headers }) => json({ data: reporting!.clearAddress(principal, addressParam(params, "ipAddress")) }, headers),
    },
  };

  async function handle(request: Request, url: URL, headers: Record<string, string>): Promise<{ response: Response; route: string | undefined }> {
    const name = url.pathname.slice(ABUSEIPDB_PREFIX.length).replace(/\/$/, "");
    const methods = Object.hasOwn(routes, name) ? routes[name] : undefined;
    if (methods === undefined) throw new ApiError(404, "The requested endpoint does not exist.");
    const route = `/api/v2/${name}`;
    const handler = methods[(request.method === "HEAD" ? "GET" : request.method) as Method];
    if (handler === undefined) throw Object.assign(new ApiError(405, `The ${request.method} method is not supported for this endpoint.`), { route });
    if (readOnly && readOnlyRefusal(request) !== null) throw Object.assign(new ApiError(503, "This server answers read-only from a snapshot: reports are not taken here."), { route });
    const principal = authenticate(request, url);
    countRequest(principal, headers);
    const params = await readParams(request, url);
    return { response: await handler({ principal, params, url, headers }), route };
  }

  function authenticate(request: Request, url: URL): Principal {
    const key = request.headers.get("key") ?? url.searchParams.get("key");
    const principal = key === null || key.trim() === "" ? null : services.credentials.byApiKey(key.trim());
    if (principal === null) throw new ApiError(401, AUTH_FAILED);
    return principal;
  }

  /** The headers of a request not counted: the large constant, and the next UTC midnight (no limiter needed). */
  function unlimitedHeaders(headers: Record<string, string>): void {
    headers["x-ratelimit-limit"] = String(UNLIMITED_RATE_LIMIT);
    headers["x-ratelimit-remaining"] = String(UNLIMITED_RATE_LIMIT);
    headers["x-ratelimit-reset"] = String((Math.floor(services.clock.now() / DAY_MS) + 1) * (DAY_MS / 1000));
  }

  /** Counts the request once; sets the three headers (a large constant for unlimited accounts), or the 429. */
  function countRequest(principal: Principal, headers: Record<string, string>): void {
    const limiter = services.rateLimiter;
    const budget = principal.dailyBudget;
    if (budget === null) {
      unlimitedHeaders(headers);
      return;
    }
    const remaining = limiter.take(principal.userId, budget);
    headers["x-ratelimit-limit"] = String(budget);
    headers["x-ratelimit-remaining"] = String(Math.max(0, remaining));
    headers["x-ratelimit-reset"] = limiter.resetHeaderOfLastTake();
    if (remaining < 0) {
      throw new ApiError(429, `Daily rate limit of ${budget} requests exceeded for this endpoint. See headers for additional details.`, undefined, {
        "retry-after": String(limiter.retryAfterSeconds()),
      });
    }
  }

  return async (request) => {
    const started = performance.now();
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    let response: Response;
    let route: string | undefined;
    try {
      ({ response, route } = await handle(request, url, headers));
    } catch (error) {
      route = (error as { route?: string }).route ?? route;
      response = errorAnswer(error, headers, outcomes);
    }
    if (!headers["x-ratelimit-limit"]) {
      // Before the credential was known (a 401, 404): the headers still go out, as clients expect them.
      const fallback: Record<string, string> = {};
      unlimitedHeaders(fallback);
      for (const [name, value] of Object.entries(fallback)) response.headers.set(name, value);
    }
    outcomes.answered(request, route, response.status, started);
    return request.method === "HEAD" ? new Response(null, { status: response.status, headers: response.headers }) : response;
  };
}

function json(body: unknown, headers: Record<string, string>, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...headers, "content-type": "application/json" } });
}

/** AbuseIPDB's error body for whatever a handler threw; internals of unexpected failures stay hidden. */
export function errorAnswer(error: unknown, headers: Record<string, string>, outcomes?: RequestOutcomes): Response {
  let status: number;
  let detail: string;
  let parameter: string | undefined;
  let extra: Record<string, string> = {};
  if (error instanceof ApiError) {
    ({ status, detail, parameter } = error);
    extra = error.headers;
  } else if (error instanceof ParameterError) {
    status = 422;
    detail = error.message;
    parameter = error.parameter;
  } else if (error instanceof BodyTooLarge) {
    status = 413;
    detail = `The request body is too large: at most ${MAX_BODY_BYTES / (1024 * 1024)} MiB.`;
  } else if (error instanceof AppError) {
    status = error.status;
    detail = error.message;
    extra = error.headers ?? {};
    if (error.errorCode === "duplicate_report") {
      const [, ip = "", window = "15 minutes"] = /reported (\S+) less than (.+?) ago/.exec(error.message) ?? [];
      detail = `You can only report the same IP address (\`${ip}\`) once in ${window}.`;
      parameter = "ip";
    } else if (error.errorCode === "validation_failed" || error.errorCode === "bad_request") {
      status = 422;
      parameter = error.details?.[0]?.field;
    }
    outcomes?.failed(error);
  } else if (storageError(error) !== null) {
    status = 503;
    detail = storageError(error)!.message;
  } else if (error instanceof UnreadableBody) {
    status = 422;
    detail = "The request body could not be read as form fields or JSON.";
  } else {
    outcomes?.failed(error);
    status = 500;
    detail = "Internal server error.";
  }
  const item: { detail: string; status: number; source?: { parameter: string } } = { detail, status };
  if (parameter !== undefined) item.source = { parameter };
  return json({ errors: [item] }, { ...headers, ...extra }, status);
}

function addressParam(params: Params, name: string): Ip {
  const text = required(params, name).trim();
  const ip = tryParseIp(text);
  if (typeof ip === "string") throw new ParameterError(name, `The ${name} must be a valid IPv4 or IPv6 address.`);
  return ip;
}

function maxAge(params: Params): number {
  return integer(params, "maxAgeInDays", 1, MAX_AGE_DAYS, DEFAULT_MAX_AGE_DAYS);
}

/** `network` of check-block: an address with a prefix (host bits allowed, as AbuseIPDB allows them), at most /16 or /48. */
function blockParam(params: Params): Cidr {
  const text = required(params, "network").trim();
  const slash = text.indexOf("/");
  const ip = tryParseIp(slash < 0 ? text : text.slice(0, slash));
  const prefixText = slash < 0 ? "" : text.slice(slash + 1);
  if (typeof ip === "string" || !/^\d{1,3}$/.test(prefixText)) throw new ParameterError("network", "The network must be in CIDR notation, e.g. 127.0.0.1/24.");
  const prefix = Number(prefixText);
  const full = ip.version === 4 ? 32 : 128;
  if (prefix > full) throw new ParameterError("network", "The network must be in CIDR notation, e.g. 127.0.0.1/24.");
  if (prefix < MAX_BLOCK[ip.version]) throw new ParameterError("network", `The network may be at most a /${MAX_BLOCK[ip.version]} for IPv${ip.version}.`);
  return cidrOf(ip, prefix);
}

function countries(params: Params, name: string): Set<string> | null {
  const value = params.get(name);
  if (value === undefined || value.trim() === "") return null;
  const codes = value.split(",").map((c) => c.trim().toUpperCase()).filter((c) => c !== "");
  if (codes.some((c) => !/^[A-Z]{2}$/.test(c))) throw new ParameterError(name, `The ${name} must be two-letter country codes separated by commas.`);
  return new Set(codes);
}
