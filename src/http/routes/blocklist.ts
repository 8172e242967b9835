// GET /v1/ip/blocklist (contract 5.10): lists for firewalls and middleware, with a strong ETag and 304 on an
// unchanged list; long lists go out as a stream of chunks rendered on demand (src/services/blocklists/blocklist.ts).
// Every 200 also carries `X-Blocklist-Count`, the number of entries, whatever the format.

import { Elysia } from "elysia";
import type { BlocklistParams } from "../../domain/blocklist/query";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";


const parsedQueries = new Map<string, BlocklistParams>();

/**
 * The query parameters, read from the URL here rather than through Elysia's `query` (a poll is answered in a
 * few microseconds, and firewalls send the same few query strings over and over). A repeated parameter
 * becomes an array, as Elysia would give it.
 */
function paramsOf(url: string): BlocklistParams {
  const at = url.indexOf("?");
  const search = at < 0 ? "" : url.slice(at + 1);
  let params = parsedQueries.get(search);
  if (params === undefined) {
    const read: Record<string, string | string[]> = {};
    for (const [name, value] of new URLSearchParams(search)) {
      const before = read[name];
      read[name] = before === undefined ? value : Array.isArray(before) ? [...before, value] : [before, value];
    }
    params = read;
    if (parsedQueries.size >= 256) parsedQueries.clear();
    parsedQueries.set(search, params);
  }
  return params;
}

export function blocklistRoutes(services: Services, auth: AuthPlugin) {
  const blocklist = services.blocklists;
  return new Elysia().use(auth).get(
    "/v1/ip/blocklist",
    ({ request, set }) => {
      const answer = blocklist.answer(paramsOf(request.url), request.headers.get("if-none-match"));
      // A returned Response bypasses `set`: carry over what the auth macro put there (X-RateLimit-*).
      const headers = set.headers as Record<string, string>;
      headers.etag = answer.etag;
      // Firewalls poll: a cache may keep the list, but must ask (If-None-Match) before reusing it.
      headers["cache-control"] = "private, no-cache";
      if (answer.status === 304) return new Response(null, { status: 304, headers });
      headers["content-type"] = answer.contentType;
      headers["x-blocklist-count"] = String(answer.count);
      return new Response(answer.body, { status: 200, headers });
    },
    { auth: "key" },
  );
}
