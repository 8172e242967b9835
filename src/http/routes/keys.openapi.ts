// The OpenAPI operations of the routes in keys.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, str, array, id, obj, envelope, json, jsonBody, operation, pathId } from "../openapi/schema";

export const keysPaths: Record<string, Record<string, Operation>> = {
  "/v1/keys": {
    post: operation("createKey", {
      tag: "API keys",
      access: "user",
      summary: "Create an API key (shown once)",
      body: jsonBody(obj({ name: str(undefined, { minLength: 1, maxLength: 100 }) })),
      ok: { 201: json("The key; store it now.", envelope(ref("ApiKeyCreated"))) },
    }),
    get: operation("listKeys", { tag: "API keys", access: "user", summary: "List your API keys (never the keys)", ok: { 200: json("Your keys.", envelope(array(ref("ApiKey")))) } }),
  },
  "/v1/keys/{id}": {
    delete: operation("revokeKey", {
      tag: "API keys",
      access: "user",
      summary: "Revoke an API key",
      params: [pathId("id", "The key's id.")],
      ok: { 200: json("The revoked key.", envelope(ref("ApiKey"))) },
      errors: [404],
    }),
  },
};
