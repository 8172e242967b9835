// Webhook subscriptions of the signed-in user (contract section 7): create (the secret is shown only in that
// response), list, read, change, delete, ping, and the deliveries with their attempts. All need a user JWT; an
// id of another user's subscription answers 404 like one that does not exist.

import { Elysia } from "elysia";
import { notFound } from "../../domain/errors";
import type { Services } from "../../services/services";
import { parsePage } from "../../domain/pagination";
import { parseId, parseNewWebhook, parseWebhookChanges } from "../../services/webhooks/subscriptions";
import { type AuthPlugin } from "../auth";

export function webhookRoutes(services: Services, auth: AuthPlugin) {
  const webhooks = services.webhooks;
  const idOf = (raw: string): number => {
    const id = parseId(raw);
    if (id === null) throw notFound("No such webhook");
    return id;
  };
  return new Elysia()
    .use(auth)
    .post(
      "/v1/webhooks",
      ({ body, principal, set }) => {
        const created = webhooks.create(principal.userId, parseNewWebhook(body));
        set.status = 201;
        return { success: true, data: created };
      },
      { auth: "user" },
    )
    .get("/v1/webhooks", ({ principal }) => ({ success: true, data: webhooks.list(principal.userId) }), { auth: "user" })
    .get("/v1/webhooks/:id", ({ params, principal }) => ({ success: true, data: webhooks.get(principal.userId, idOf(params.id)) }), {
      auth: "user",
    })
    .patch(
      "/v1/webhooks/:id",
      ({ params, body, principal }) => {
        const id = idOf(params.id);
        webhooks.get(principal.userId, id); // another user's id is 404 whatever the body holds
        return { success: true, data: webhooks.update(principal.userId, id, parseWebhookChanges(body)) };
      },
      { auth: "user" },
    )
    .delete(
      "/v1/webhooks/:id",
      ({ params, principal }) => {
        const id = idOf(params.id);
        webhooks.delete(principal.userId, id);
        return { success: true, data: { id: String(id), deleted: true } };
      },
      { auth: "user" },
    )
    .post(
      "/v1/webhooks/:id/ping",
      ({ params, principal, set }) => {
        const queued = webhooks.ping(principal.userId, idOf(params.id));
        set.status = 202;
        return { success: true, data: queued };
      },
      { auth: "user" },
    )
    .get(
      "/v1/webhooks/:id/deliveries",
      ({ params, query, principal }) => {
        const id = idOf(params.id);
        webhooks.get(principal.userId, id); // 404 before any complaint about the query
        const page = parsePage(query);
        return { success: true, ...webhooks.deliveries(principal.userId, id, page) };
      },
      { auth: "user" },
    );
}
