// The scheduled jobs for admins (contract section 9): their status, and running one now. A run answers once it
// has finished, with the job's status afterwards (a failed run shows its `lastError`); 409 while it is running.

import { Elysia } from "elysia";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

export function jobRoutes(services: Services, auth: AuthPlugin) {
  return new Elysia()
    .use(auth)
    .get("/v1/admin/jobs", () => ({ success: true, data: services.scheduler.jobs() }), { auth: "admin" })
    .post(
      "/v1/admin/jobs/:name/run",
      async ({ params }) => ({ success: true, data: await services.scheduler.runNow(params.name) }),
      { auth: "admin" },
    );
}
