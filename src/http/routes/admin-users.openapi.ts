// The OpenAPI operations of the routes in admin-users.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, array, id, envelope, json, jsonBody, operation, pathId } from "../openapi/schema";

export const adminUsersPaths: Record<string, Record<string, Operation>> = {
  "/v1/admin/users": {
    get: operation("listUsers", { tag: "Administration", access: "admin", summary: "List accounts", ok: { 200: json("Accounts.", envelope(array(ref("User")))) } }),
    post: operation("createUser", { tag: "Administration", access: "admin", summary: "Create an account", body: jsonBody(ref("NewUser")), ok: { 201: json("The account (never the password hash).", envelope(ref("User"))) } }),
  },
  "/v1/admin/users/{id}": {
    patch: operation("updateUser", {
      tag: "Administration",
      access: "admin",
      summary: "Change an account: tier, role, disabled, dailyLimit",
      description: "Disabling an account refuses its tokens and keys at once.",
      params: [pathId("id", "The user's id.")],
      body: jsonBody(ref("UserPatch")),
      ok: { 200: json("The account.", envelope(ref("User"))) },
      errors: [404],
    }),
  },
};
