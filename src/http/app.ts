// Assembles the HTTP API from one route module per resource. Errors of every route go through one onError;
// bodies through one parser that enforces the contract's media types and size limits.

import { Elysia } from "elysia";
import type { Services } from "../services/services";
import { errorResponse, toAppError } from "./errors";
import { readBody } from "./body";
import { healthRoutes } from "./routes/health";

export function createApp(services: Services) {
  return new Elysia()
    .onParse({ as: "global" }, ({ request, path }) => readBody(request, path))
    .onError({ as: "global" }, ({ code, error }) => {
      const appError = toAppError(code, error);
      if (appError.errorCode === "internal_error") console.error("internal error:", error);
      return errorResponse(appError);
    })
    .use(healthRoutes(services));
}

export type App = ReturnType<typeof createApp>;
