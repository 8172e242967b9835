// The OpenAPI operations of the routes in webhooks.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, array, id, obj, envelope, paged, json, jsonBody, operation, pageParams } from "../openapi/schema";

export const webhooksPaths: Record<string, Record<string, Operation>> = {
  "/v1/webhooks": {
    post: operation("createWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Subscribe to events (the secret is shown once)",
      body: jsonBody(ref("NewWebhook")),
      ok: { 201: json("The subscription with its secret.", envelope(ref("WebhookCreated"))) },
    }),
    get: operation("listWebhooks", { tag: "Webhooks", access: "user", summary: "Your subscriptions", ok: { 200: json("Subscriptions.", envelope(array(ref("Webhook")))) } }),
  },
  "/v1/webhooks/{id}": {
    get: operation("getWebhook", { tag: "Webhooks", access: "user", summary: "One subscription", params: ["webhookId"], ok: { 200: json("The subscription.", envelope(ref("Webhook"))) }, errors: [404] }),
    patch: operation("updateWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Change a subscription",
      params: ["webhookId"],
      body: jsonBody(ref("WebhookPatch")),
      ok: { 200: json("The subscription.", envelope(ref("Webhook"))) },
      errors: [404],
    }),
    delete: operation("deleteWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Delete a subscription",
      params: ["webhookId"],
      ok: { 200: json("Deleted.", envelope(obj({ id: id("Webhook"), deleted: { const: true } }))) },
      errors: [404],
    }),
  },
  "/v1/webhooks/{id}/ping": {
    post: operation("pingWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Queue a ping event to the subscription",
      params: ["webhookId"],
      ok: { 202: json("Queued.", envelope(ref("PingQueued"))) },
      errors: [400, 404],
    }),
  },
  "/v1/webhooks/{id}/deliveries": {
    get: operation("webhookDeliveries", {
      tag: "Webhooks",
      access: "user",
      summary: "Deliveries of a subscription with their attempts, newest first",
      params: ["webhookId", ...pageParams(20)],
      ok: { 200: json("Deliveries.", paged(ref("WebhookDelivery"))) },
      errors: [400, 404],
    }),
  },
};
