// A server answering from a snapshot (`serve --snapshot FILE`, contract section 8) is read-only: every request
// that would change something gets 503 read_only before it reaches a route, body parsing or authentication.
// Reads that travel as POST (the bulk check) still pass. A normal server gets an empty plugin: no per-request cost.

import { Elysia } from "elysia";
import { AppError } from "../domain/errors";
import type { Services } from "../services/services";
import { errorResponse } from "./errors";

/** POST routes that only read. */
const READING_POSTS = new Set(["/v1/ip/bulk"]);
const READING_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const end = url.indexOf("?", start);
  return start < 0 ? "/" : url.slice(start, end < 0 ? undefined : end);
}

/** The 503 for a writing request on a read-only server; null when the request may go on. */
export function readOnlyRefusal(request: Request): Response | null {
  if (READING_METHODS.has(request.method)) return null;
  const path = pathOf(request.url);
  if (request.method === "POST" && READING_POSTS.has(path)) return null;
  return errorResponse(
    new AppError("read_only", `This server answers read-only from a snapshot: ${request.method} ${path} would change data and is not available here`),
  );
}

export function readOnlyGuard(services: Services) {
  const plugin = new Elysia();
  if (services.config.snapshot === null) return plugin;
  return plugin.onRequest(({ request }) => readOnlyRefusal(request) ?? undefined);
}
