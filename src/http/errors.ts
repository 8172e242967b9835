// The one place where errors become the contract's error body (section 1). A 500 never shows a stack or SQL.

import { AppError, type ErrorCode, STATUS_OF_CODE } from "../domain/errors";
import { storageError } from "../store/database";

export interface ErrorBody {
  success: false;
  error: string;
  code: ErrorCode;
  details?: { field: string; message: string }[];
}

export function errorResponse(error: AppError, extraHeaders?: Record<string, string>): Response {
  const body: ErrorBody = { success: false, error: error.message, code: error.errorCode };
  if (error.details && error.details.length > 0) body.details = error.details;
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8", ...extraHeaders, ...error.headers };
  if (error.errorCode === "unauthorized") headers["www-authenticate"] ??= "Bearer";
  return new Response(JSON.stringify(body), { status: STATUS_OF_CODE[error.errorCode], headers });
}

/** Maps whatever reached Elysia's onError to an AppError, hiding internals of unexpected failures. */
export function toAppError(elysiaCode: string | number, error: unknown): AppError {
  if (error instanceof AppError) return error;
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof AppError) return cause;
  const storage = storageError(error);
  if (storage !== null) return storage;
  switch (elysiaCode) {
    case "NOT_FOUND":
      return new AppError("not_found", "No such endpoint");
    case "PARSE":
      return new AppError("bad_request", "The request body is not valid JSON");
    case "VALIDATION":
      return validationError(error);
    case "INVALID_COOKIE_SIGNATURE":
      return new AppError("bad_request", "Invalid cookie");
    default:
      return new AppError("internal_error", "Internal server error");
  }
}

/** Elysia's schema validation error → validation_failed with one detail per field. */
function validationError(error: unknown): AppError {
  const all = (error as { all?: { path?: string; summary?: string; message?: string }[] } | null)?.all ?? [];
  const details = all.map((e) => ({
    field: (e.path ?? "").replace(/^\//, "").replaceAll("/", ".") || "(request)",
    message: e.summary ?? e.message ?? "is not valid",
  }));
  return new AppError("validation_failed", "The request is not valid", { details });
}
