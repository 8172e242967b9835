// GET /v1/ip/blocklist (contract 5.10): lists for firewalls and middleware, with a strong ETag and 304 on an
// unchanged list; long lists go out as a stream of chunks rendered on demand (src/services/blocklists/blocklist.ts).
// Every 200 also carries `X-Blocklist-Count`, the number of entries, whatever the format. Served by Bun's router
// (fast-routes.ts): firewalls poll it as often as middleware looks addresses up. This file: its query and headers.

import type { BlocklistParams } from "../../domain/blocklist/query";
import type { BlocklistAnswer } from "../../services/blocklists/blocklist";

const parsedQueries = new Map<string, BlocklistParams>();

/**
 * The query parameters, read from the URL here rather than through Elysia's `query` (a poll is answered in a
 * few microseconds, and firewalls send the same few query strings over and over). A repeated parameter
 * becomes an array, as Elysia would give it.
 */
export function paramsOf(url: string): BlocklistParams {
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

/** The headers of a blocklist answer: its ETag, the cache rule, and for a 200 the type and count. */
export function blocklistHeaders(answer: BlocklistAnswer, headers: Record<string, string>): Record<string, string> {
  headers.etag = answer.etag;
  // Firewalls poll: a cache may keep the list, but must ask (If-None-Match) before reusing it.
  headers["cache-control"] = "private, no-cache";
  if (answer.status === 200) {
    headers["content-type"] = answer.contentType;
    headers["x-blocklist-count"] = String(answer.count);
  }
  return headers;
}
