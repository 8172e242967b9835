// The OpenAPI operations of the routes in allowlist.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, str, array, id, obj, envelope, json, jsonBody, operation, query, pathId } from "../openapi/schema";

export const allowlistPaths: Record<string, Record<string, Operation>> = {
  "/v1/admin/allowlist": {
    get: operation("listAllowlist", { tag: "Administration", access: "admin", summary: "The allowlist", ok: { 200: json("Entries.", envelope(array(ref("AllowlistEntry")))) } }),
    post: operation("addAllowlist", {
      tag: "Administration",
      access: "admin",
      summary: "Allowlist a network: never on a blocklist",
      body: jsonBody(obj({ cidr: str("A network or one address."), note: str() }, ["note"])),
      ok: { 201: json("The entry.", envelope(ref("AllowlistEntry"))) },
    }),
    delete: operation("removeAllowlist", {
      tag: "Administration",
      access: "admin",
      summary: "Remove an allowlist entry by CIDR",
      description: "The CIDR in the JSON body `{\"cidr\"}` or the query `?cidr=`.",
      params: [query("cidr", "The network to remove (or send it in the body).", str())],
      body: { required: false, content: { "application/json": { schema: obj({ cidr: str() }) } } },
      ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) },
      errors: [404],
    }),
  },
  "/v1/admin/allowlist/{id}": {
    delete: operation("removeAllowlistById", {
      tag: "Administration",
      access: "admin",
      summary: "Remove an allowlist entry by id or CIDR",
      params: [pathId("id", "The entry's id, or its CIDR percent-encoded (`10.0.0.0%2F8`).")],
      ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) },
      errors: [404],
    }),
  },
};
