// What every router does with a request once it is answered, in one place for the four of them (the Elysia app,
// the fast routes, /api/v2 and the bouncer routes): count it by method, route template and status class with its
// duration (for /metrics), write the access-log line, and turn a thrown error into the contract's AppError
// (an unexpected one logged, never shown).

import { type AppError } from "../domain/errors";
import type { Services } from "../services/services";
import { toAppError } from "./errors";

export interface RequestOutcomes {
  /** A request answered with `status`, started at `startedAt` (performance.now()). */
  answered(request: Request, route: string | undefined, status: number, startedAt: number): void;
  /** The AppError a thrown error answers as, counted by its code; `frameworkCode` is Elysia's, when it has one. */
  failed(error: unknown, frameworkCode?: string | number): AppError;
}

export function requestOutcomes(services: Services): RequestOutcomes {
  const counters = services.metrics.requests;
  const log = accessLogOf(services);
  return {
    answered(request, route, status, startedAt) {
      const seconds = (performance.now() - startedAt) / 1000;
      counters.record(request.method, route, status, seconds);
      log?.(request, status, seconds);
    },
    failed(error, frameworkCode = "UNKNOWN") {
      const appError = toAppError(frameworkCode, error);
      if (appError.errorCode === "internal_error") console.error("internal error:", error);
      counters.recordError(appError.errorCode);
      return appError;
    },
  };
}

/**
 * `--access-log`: a writer of one line per request on stderr (time, method, path, status, duration), or null
 * when the option is off, so callers skip it at no cost.
 */
export function accessLogOf(services: Services): ((request: Request, status: number, seconds: number) => void) | null {
  if (!services.config.accessLog) return null;
  return (request, status, seconds) => {
    const url = request.url;
    const path = withoutCredential(url.slice(url.indexOf("/", url.indexOf("//") + 2)));
    process.stderr.write(`${new Date().toISOString()} ${request.method} ${path} ${status} ${(seconds * 1000).toFixed(1)}ms\n`);
  };
}

/**
 * The path and query with the value of a credential in the query string (the AbuseIPDB-compatible `?key=`)
 * replaced by `[redacted]`. Names are compared decoded, as the routes read them: `?%6Bey=` is a key too.
 */
function withoutCredential(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf("?");
  if (q < 0) return pathAndQuery;
  const parts = pathAndQuery.slice(q + 1).split("&").map((part) => {
    const eq = part.indexOf("=");
    const name = eq < 0 ? part : part.slice(0, eq);
    return decodedName(name).toLowerCase() === "key" ? `${name}=[redacted]` : part;
  });
  return `${pathAndQuery.slice(0, q)}?${parts.join("&")}`;
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll("+", " "));
  } catch {
    return name;
  }
}
