// Detected threat patterns for anyone with a key (contract section 9): newest first, paginated like every list.

import { Elysia } from "elysia";
import { parsePage } from "../../domain/pagination";
import type { Services } from "../../services/services";
import { type AuthPlugin } from "../auth";

export function threatRoutes(services: Services, auth: AuthPlugin) {
  return new Elysia().use(auth).get(
    "/v1/threats",
    ({ query }) => {
      const { limit, offset } = parsePage(query, { limit: 20, offset: 0 });
      const { rows, total } = services.threats.list(limit, offset);
      return { success: true, data: rows, pagination: { limit, offset, total } };
    },
    { auth: "key" },
  );
}
