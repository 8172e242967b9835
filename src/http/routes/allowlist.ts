// The allowlist for admins (contract section 6): networks never listed on a blocklist.

import { Elysia } from "elysia";
import { AppError } from "../../domain/errors";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

/**
 * A path parameter as text: the router has already percent-decoded it (decoding again read `%2541` as `A`, the
 * double decoding pathAddress stopped), and hands over null when that encoding is broken.
 */
function pathParam(raw: string | null | undefined): string {
  if (typeof raw !== "string") throw new AppError("bad_request", "The path is not valid percent-encoding");
  return raw;
}

export function allowlistRoutes(services: Services, auth: AuthPlugin) {
  const { allowlist } = services;
  const removeOrThrow = (cidrOrId: string) => {
    if (!allowlist.remove(cidrOrId)) throw new AppError("not_found", `${cidrOrId} is not on the allowlist`);
    return { success: true, data: { removed: cidrOrId } };
  };
  return new Elysia()
    .use(auth)
    .get("/v1/admin/allowlist", () => ({ success: true, data: allowlist.list() }), { auth: "admin" })
    .post(
      "/v1/admin/allowlist",
      ({ body, principal, set }) => {
        const { cidr, note } = (body ?? {}) as { cidr?: unknown; note?: unknown };
        const entry = allowlist.add(cidr as string, (note ?? "") as string, principal.userId);
        set.status = 201;
        return { success: true, data: entry };
      },
      { auth: "admin" },
    )
    .delete(
      "/v1/admin/allowlist",
      ({ body, query }) => {
        const cidr = (body as { cidr?: unknown } | undefined)?.cidr ?? query.cidr;
        if (typeof cidr !== "string" || cidr === "") {
          throw new AppError("validation_failed", "cidr is required", { details: [{ field: "cidr", message: "is required" }] });
        }
        return removeOrThrow(cidr);
      },
      { auth: "admin" },
    )
    .delete("/v1/admin/allowlist/:id", ({ params }) => removeOrThrow(pathParam(params.id)), { auth: "admin" });
}
