// The admin users API (contract section 3): list, create (201, never the hash) and change accounts: tier,
// role, disabled, dailyLimit. Disabling an account refuses its tokens and keys at once (the credential cache
// is rebuilt on the change).

import { Elysia } from "elysia";
import { AppError } from "../../domain/errors";
import { parseNewUser, parseUserPatch, userView, type User } from "../../services/accounts/accounts";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

export function adminUserRoutes(services: Services, auth: AuthPlugin) {
  const { accounts, rateLimiter } = services;
  const publicUser = (user: User) => ({ ...userView(user), requestsToday: rateLimiter.used(user.id) });
  return new Elysia()
    .use(auth)
    .get("/v1/admin/users", () => ({ success: true, data: accounts.list().map(publicUser) }), { auth: "admin" })
    .post(
      "/v1/admin/users",
      async ({ body, set }) => {
        const user = await accounts.create(parseNewUser(body));
        set.status = 201;
        return { success: true, data: publicUser(user) };
      },
      { auth: "admin" },
    )
    .patch(
      "/v1/admin/users/:id",
      ({ params, body }) => {
        const id = /^[1-9]\d{0,15}$/.test(params.id) ? Number(params.id) : null;
        if (id === null) throw new AppError("not_found", `No user with id ${params.id}`);
        // The body is checked before the id is looked up, so a bad body is 400 even for an unknown id.
        const patch = parseUserPatch(body);
        return { success: true, data: publicUser(accounts.update(id, patch)) };
      },
      { auth: "admin" },
    );
}
