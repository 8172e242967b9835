// Liveness and readiness for load balancers and orchestrators; neither counts against a rate limit.

import { databaseAnswers } from "../../store/database-health";
import { Elysia } from "elysia";
import type { Services } from "../../services/services";

export function healthRoutes(services: Services) {
  return new Elysia({ name: "health" })
    .get("/healthz", () => ({ success: true, status: "ok" }))
    .get("/readyz", ({ set }) => {
      const database = databaseAnswers(services.store);
      const index = services.isReady();
      const ready = database && index;
      if (!ready) set.status = 503;
      return { success: ready, status: ready ? "ready" : "starting", checks: { database, index } };
    });
}
