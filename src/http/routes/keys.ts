// API keys of the signed-in user (contract section 3): create (the key is shown only in that response),
// list (never the key), revoke. A user sees and revokes only their own; all of it needs a user JWT.

import { Elysia } from "elysia";
import { isoTime } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { apiKeyView, parseKeyName } from "../../services/accounts/api-keys";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

export function keyRoutes(services: Services, auth: AuthPlugin) {
  const apiKeys = services.apiKeys;
  return new Elysia()
    .use(auth)
    .post(
      "/v1/keys",
      ({ body, principal, set }) => {
        const name = parseKeyName((body as { name?: unknown } | undefined)?.name);
        const { record, key } = apiKeys.create(principal.userId, name);
        set.status = 201;
        return { success: true, data: { id: String(record.id), name: record.name, key, prefix: record.prefix, createdAt: isoTime(record.createdAt) } };
      },
      { auth: "user" },
    )
    .get("/v1/keys", ({ principal }) => ({ success: true, data: apiKeys.listForUser(principal.userId).map(apiKeyView) }), { auth: "user" })
    .delete(
      "/v1/keys/:id",
      ({ params, principal }) => {
        const id = parseId(params.id);
        if (id === null) throw new AppError("not_found", `No active API key with id ${params.id}`);
        const record = apiKeys.revoke(id, principal.userId);
        return { success: true, data: apiKeyView(record) };
      },
      { auth: "user" },
    );
}

/** A public id (decimal string of a row id), or null when it cannot be one. */
function parseId(raw: string): number | null {
  return /^[1-9]\d{0,15}$/.test(raw) ? Number(raw) : null;
}
