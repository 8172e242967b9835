// POST /v1/auth/login (contract section 3): email and password → a user access token. Not counted against a
// budget. GET /v1/auth/whoami: who a credential belongs to, for operators checking a key or token.

import { Elysia } from "elysia";
import { isoTime } from "../../domain/clock";
import { parseLogin } from "../../services/accounts/accounts";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

export function authRoutes(services: Services, auth: AuthPlugin) {
  return new Elysia()
    .use(auth)
    .post("/v1/auth/login", async ({ body }) => {
      const { email, password } = parseLogin(body);
      const login = await services.credentials.login(email, password);
      return {
        success: true,
        data: {
          accessToken: login.accessToken,
          tokenType: login.tokenType,
          expiresIn: login.expiresIn,
          expiresAt: isoTime(login.expiresAt),
          user: { id: String(login.user.id), email: login.user.email, tier: login.user.tier, role: login.user.role },
        },
      };
    })
    .get(
      "/v1/auth/whoami",
      ({ principal }) => ({
        success: true,
        data: { id: String(principal.userId), email: principal.email, role: principal.role, tier: principal.tier, via: principal.via },
      }),
      { auth: "key" },
    );
}
