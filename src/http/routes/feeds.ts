// Feeds for admins (contract section 12): a one-off import of a list sent as text/plain under a feed's name,
// and scheduled feeds refreshed from a URL or a file (add, list, show, refresh now, remove).

import { Elysia } from "elysia";
import { parseCategory } from "../../domain/categories";
import { AppError, notFound, validationFailed } from "../../domain/errors";
import { parseFeedName, parseFeedSeverity } from "../../domain/feeds";
import { parseFeedDefinition } from "../../services/feeds/feeds";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

function parseReplace(value: unknown): boolean {
  if (value === undefined || value === "" || value === "false" || value === "0") return false;
  if (value === "true" || value === "1") return true;
  throw validationFailed([{ field: "replace", message: "replace is true or false" }]);
}

export function feedRoutes(services: Services, auth: AuthPlugin) {
  const { feeds } = services;
  const removeOrThrow = async (name: string) => {
    if (feeds.get(name) === null) throw notFound(`No feed named ${name}`);
    await feeds.removeInTurns(name);
    return { success: true, data: { removed: name } };
  };
  return new Elysia()
    .use(auth)
    .get("/v1/admin/feeds", () => ({ success: true, data: feeds.list() }), { auth: "admin" })
    .post(
      "/v1/admin/feeds",
      async ({ body, set }) => {
        if (typeof body !== "object" || body === null || Array.isArray(body)) throw new AppError("bad_request", "The body must be a JSON object");
        const result = await feeds.add(parseFeedDefinition(body as Record<string, unknown>));
        set.status = 201;
        return { success: true, data: result };
      },
      { auth: "admin" },
    )
    .delete(
      "/v1/admin/feeds",
      ({ body, query }) => {
        const name = (body as { name?: unknown } | undefined)?.name ?? query.name;
        return removeOrThrow(parseFeedName(name));
      },
      { auth: "admin" },
    )
    .get(
      "/v1/admin/feeds/:name",
      ({ params }) => {
        const feed = feeds.get(params.name);
        if (feed === null) throw notFound(`No feed named ${params.name}`);
        return { success: true, data: feed };
      },
      { auth: "admin" },
    )
    .post(
      "/v1/admin/feeds/:name",
      async ({ params, query, body }) => {
        const name = parseFeedName(params.name);
        const category = parseCategory(query.category);
        const severity = parseFeedSeverity(query.severity);
        const replace = parseReplace(query.replace);
        if (typeof body !== "string" || body.length === 0) throw new AppError("bad_request", "Send the list as a text/plain body: one address or CIDR a line");
        const existing = feeds.get(name);
        if (existing !== null && existing.source !== null) throw new AppError("bad_request", `${name} is a scheduled feed: it is refreshed from its own source`);
        return { success: true, data: await feeds.importTextInTurns(name, body, { category, severity, replace }) };
      },
      { auth: "admin" },
    )
    .post(
      "/v1/admin/feeds/:name/refresh",
      async ({ params }) => {
        const feed = feeds.get(params.name);
        if (feed === null) throw notFound(`No feed named ${params.name}`);
        if (feed.source === null) throw new AppError("bad_request", `${params.name} is a one-off import: it has no source to refresh from`);
        return { success: true, data: await feeds.refresh(params.name) };
      },
      { auth: "admin" },
    )
    .delete("/v1/admin/feeds/:name", ({ params }) => removeOrThrow(params.name), { auth: "admin" });
}
