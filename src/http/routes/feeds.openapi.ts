// The OpenAPI operations of the routes in feeds.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, str, int, array, obj, envelope, json, jsonBody, operation, query, pathId } from "../openapi/schema";

export const feedsPaths: Record<string, Record<string, Operation>> = {
  "/v1/admin/feeds": {
    get: operation("listFeeds", { tag: "Administration", access: "admin", summary: "Feeds with their entries and refresh status", ok: { 200: json("Feeds.", envelope(array(ref("Feed")))) } }),
    post: operation("addFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Add a feed refreshed on a schedule from a URL or a file",
      description:
        "Each refresh replaces the feed's entries; a URL is fetched with If-None-Match / If-Modified-Since. A failed refresh keeps the previous entries and records the error. The feed is refreshed once at once.",
      body: jsonBody(
        obj(
          {
            name: str(undefined, { pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" }),
            url: str("http or https; or give file.", { format: "uri" }),
            file: str("An absolute path on the appliance (a mounted share); or give url."),
            category: ref("Category"),
            severity: int("Default 4.", { minimum: 1, maximum: 5 }),
            schedule: str("croner pattern, UTC; default hourly (`0 * * * *`)."),
          },
          ["url", "file", "severity", "schedule"],
        ),
      ),
      ok: { 201: json("The feed and its first refresh.", envelope(obj({ feed: ref("Feed"), refresh: ref("FeedRefresh") }))) },
    }),
    delete: operation("removeFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Remove a feed and its listings",
      params: [query("name", "The feed (or send `{\"name\"}` in the body).", str())],
      body: { required: false, content: { "application/json": { schema: obj({ name: str() }) } } },
      ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) },
      errors: [404],
    }),
  },
  "/v1/admin/feeds/{name}": {
    get: operation("getFeed", { tag: "Administration", access: "admin", summary: "One feed", params: [pathId("name", "The feed.")], ok: { 200: json("The feed.", envelope(ref("Feed"))) }, errors: [404] }),
    post: operation("importFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Import a list under a feed's name (one-off)",
      description:
        "The body is the list as FireHOL (`.netset`/`.ipset`), Spamhaus (DROP/EDROP/DROPv6, `CIDR ; SBLnnn`) and blocklist.de publish it: one address or CIDR a line, `#` and `;` comments. Bad lines are listed with their numbers and skipped. With `replace=true` the feed's previous entries are swapped for these atomically; a list with no valid entry is then refused.",
      params: [
        pathId("name", "The feed: `networks[].source`, reporter `feed:NAME`."),
        query("category", "The category of every entry.", ref("Category"), true),
        query("severity", "1 to 5 (default 4).", int(undefined, { minimum: 1, maximum: 5, default: 4 })),
        query("replace", "true: replace the feed's entries; false (default): add to them.", str(undefined, { enum: ["true", "false"] })),
      ],
      body: { required: true, content: { "text/plain": { schema: str(undefined, { examples: ["1.10.16.0/20 ; SBL256894\n2001:678:738::/48 ; SBL492470\n5.188.10.179\n"] }) } } },
      ok: { 200: json("What was imported.", envelope(ref("FeedImport"))) },
    }),
    delete: operation("removeFeedByName", { tag: "Administration", access: "admin", summary: "Remove a feed and its listings", params: [pathId("name", "The feed.")], ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) }, errors: [404] }),
  },
  "/v1/admin/feeds/{name}/refresh": {
    post: operation("refreshFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Refresh a scheduled feed now",
      params: [pathId("name", "The feed.")],
      ok: { 200: json("The outcome; a failure keeps the previous entries.", envelope(ref("FeedRefresh"))) },
      errors: [404],
    }),
  },
};
