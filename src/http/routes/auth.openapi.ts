// The OpenAPI operations of the routes in auth.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, envelope, json, jsonBody, operation } from "../openapi/schema";

export const authPaths: Record<string, Record<string, Operation>> = {
  "/v1/auth/login": {
    post: operation("login", {
      tag: "Authentication",
      access: "public",
      summary: "Log in: email and password for a user access token",
      description: "Wrong email and wrong password get the same 401. After 10 failed logins for one email within 15 minutes: 429 with Retry-After.",
      body: jsonBody(ref("Login")),
      ok: { 200: json("The access token.", envelope(ref("AccessToken"))) },
      errors: [401, 429],
    }),
  },
  "/v1/auth/whoami": {
    get: operation("whoami", { tag: "Authentication", access: "key", summary: "Who a credential belongs to", ok: { 200: json("The account.", envelope(ref("WhoAmI"))) } }),
  },
};
