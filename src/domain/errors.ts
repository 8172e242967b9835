// The one error family of the product. Every layer throws AppError; the HTTP layer maps it to the
// contract's error body in one place (src/http/errors.ts), the CLI prints its message.

export type ErrorCode =
  | "bad_request"
  | "validation_failed"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "duplicate_report"
  | "internal_error"
  | "busy"
  | "read_only";

export const STATUS_OF_CODE: Record<ErrorCode, number> = {
  bad_request: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  duplicate_report: 429,
  internal_error: 500,
  busy: 503,
  read_only: 503,
};

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly errorCode: ErrorCode;
  readonly details?: FieldError[];
  /** Extra response headers, e.g. Retry-After for 429. */
  readonly headers?: Record<string, string>;

  constructor(errorCode: ErrorCode, message: string, options: { details?: FieldError[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = "AppError";
    this.errorCode = errorCode;
    this.details = options.details;
    this.headers = options.headers;
  }

  get status(): number {
    return STATUS_OF_CODE[this.errorCode];
  }
}

export const notFound = (message: string) => new AppError("not_found", message);
export const validationFailed = (details: FieldError[], message = "The request is not valid") =>
  new AppError("validation_failed", message, { details });
