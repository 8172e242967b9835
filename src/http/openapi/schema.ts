// Helpers of the OpenAPI document (GET /v1/openapi.json): its types, schema builders, and `operation()`, which
// gives every operation its security, access note, rate-limit headers and error responses from its access level.

import { type ErrorCode, STATUS_OF_CODE } from "../../domain/errors";
import { MAX_PAGE_LIMIT } from "../../domain/pagination";

export type Schema = { [keyword: string]: unknown };

/** Who may call an operation: nobody needs a credential, any credential, a user token, an admin's token. */
export type Access = "public" | "key" | "user" | "admin" | "metrics";

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  description: string;
  schema: Schema;
}

export interface Operation {
  tags: string[];
  summary: string;
  description?: string;
  operationId: string;
  security: Record<string, string[]>[];
  /** Which credential the route needs; the docs page shows it. */
  "x-access": Access;
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: Schema;
  responses: Record<string, Schema>;
}

export interface OpenApiDocument {
  openapi: "3.1.0";
  info: Schema;
  servers: Schema[];
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Schema>>;
  components: { schemas: Record<string, Schema>; parameters: Record<string, Parameter>; responses: Record<string, Schema>; headers: Record<string, Schema>; securitySchemes: Record<string, Schema> };
}

// ---- schema helpers ----------------------------------------------------------------------------------------

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const str = (description?: string, extra: Schema = {}): Schema => ({ type: "string", ...(description ? { description } : {}), ...extra });
export const int = (description?: string, extra: Schema = {}): Schema => ({ type: "integer", ...(description ? { description } : {}), ...extra });
export const bool = (description?: string): Schema => ({ type: "boolean", ...(description ? { description } : {}) });
export const time = (description?: string): Schema => ({ type: "string", format: "date-time", ...(description ? { description } : {}) });
export const nullable = (schema: Schema): Schema =>
  typeof schema.type === "string"
    ? { ...schema, type: [schema.type, "null"], ...(Array.isArray(schema.enum) ? { enum: [...schema.enum, null] } : {}) }
    : { anyOf: [schema, { type: "null" }], ...(schema.description ? { description: schema.description } : {}) };
export const array = (items: Schema, extra: Schema = {}): Schema => ({ type: "array", items, ...extra });
export const anyOfSchema = (schemas: Schema[], description: string): Schema => ({ anyOf: schemas, description });
export const id = (what: string): Schema => str(`${what} id (a decimal string)`, { pattern: "^[1-9][0-9]*$" });

/** An object whose listed properties are all required unless named in `optional`. */
export function obj(properties: Record<string, Schema>, optional: string[] = [], extra: Schema = {}): Schema {
  return { type: "object", required: Object.keys(properties).filter((k) => !optional.includes(k)), properties, ...extra };
}

export const TRUE: Schema = { const: true };
/** `{"success": true, "data": ...}`: the envelope of every JSON answer but the flat IP detail record. */
export const envelope = (data: Schema): Schema => obj({ success: TRUE, data });
export const paged = (item: Schema): Schema => obj({ success: TRUE, data: array(item), pagination: ref("Pagination") });

export function json(description: string, schema: Schema, headers?: Record<string, Schema>): Schema {
  return { description, ...(headers ? { headers } : {}), content: { "application/json": { schema } } };
}

export const jsonBody = (schema: Schema, description?: string): Schema => ({
  required: true,
  ...(description ? { description } : {}),
  content: { "application/json": { schema } },
});

// ---- operations ---------------------------------------------------------------------------------------------

export const SECURITY: Record<Access, Record<string, string[]>[]> = {
  public: [],
  key: [{ ApiKey: [] }, { Bearer: [] }],
  user: [{ Bearer: [] }],
  admin: [{ Bearer: [] }],
  // `{}` makes the token optional: /metrics is open unless the server runs with --metrics-token.
  metrics: [{}, { MetricsToken: [] }],
};

export const ACCESS_NOTE: Record<Access, string> = {
  public: "No credential needed; not counted against a rate limit.",
  key: "An API key (`X-API-Key` or `Authorization: Bearer`) or a user access token. Counts 1 against the account's daily budget.",
  user: "A user access token (`Authorization: Bearer <JWT>` from `POST /v1/auth/login`); an API key is refused with 401. Counts 1 against the account's daily budget.",
  admin: "A user access token of an account with role `admin` (403 for other accounts). Counts 1 against the account's daily budget.",
  metrics: "Open, unless the server runs with `--metrics-token`: then `Authorization: Bearer <metrics token>`. Not counted against a rate limit.",
};

export const RATE_LIMIT_HEADERS: Record<string, Schema> = {
  "X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
  "X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
  "X-RateLimit-Reset": { $ref: "#/components/headers/X-RateLimit-Reset" },
};

export interface OperationSpec {
  tag: string;
  summary: string;
  description?: string;
  access: Access;
  params?: (Parameter | string)[];
  body?: Schema;
  /** Success responses by status; counted operations get the X-RateLimit-* headers on them. */
  ok: Record<string, Schema>;
  /** Error statuses this operation answers besides those its access level brings (401, 403, 429). */
  errors?: number[];
}

export const ERROR_RESPONSE_OF_STATUS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  413: "PayloadTooLarge",
  415: "UnsupportedMediaType",
  429: "TooManyRequests",
  503: "ReadOnly",
};

export function operation(operationId: string, spec: OperationSpec): Operation {
  const counted = spec.access === "key" || spec.access === "user" || spec.access === "admin";
  const responses: Record<string, Schema> = {};
  for (const [status, response] of Object.entries(spec.ok)) {
    responses[status] = counted && response.headers === undefined && status !== "304" ? { ...response, headers: RATE_LIMIT_HEADERS } : response;
  }
  const errors = new Set(spec.errors ?? []);
  if (spec.body) errors.add(400).add(413).add(415);
  if (counted || spec.access === "metrics") errors.add(401);
  if (spec.access === "admin") errors.add(403);
  if (counted) errors.add(429);
  for (const status of [...errors].sort()) responses[String(status)] = { $ref: `#/components/responses/${ERROR_RESPONSE_OF_STATUS[status]}` };
  return {
    tags: [spec.tag],
    summary: spec.summary,
    description: [spec.description, `**Access:** ${ACCESS_NOTE[spec.access]}`].filter(Boolean).join("\n\n"),
    operationId,
    security: SECURITY[spec.access],
    "x-access": spec.access,
    ...(spec.params ? { parameters: spec.params.map((p) => (typeof p === "string" ? { $ref: `#/components/parameters/${p}` } : p)) } : {}),
    ...(spec.body ? { requestBody: spec.body } : {}),
    responses,
  };
}

export const query = (name: string, description: string, schema: Schema, required = false): Parameter => ({ name, in: "query", required, description, schema });
export const pathId = (name: string, description: string, schema: Schema = str()): Parameter => ({ name, in: "path", required: true, description, schema });

export const pageParams = (defaultLimit: number): Parameter[] => [
  query("limit", `Rows per page, 1 to ${MAX_PAGE_LIMIT} (default ${defaultLimit}); anything else is 400.`, int(undefined, { minimum: 1, maximum: MAX_PAGE_LIMIT, default: defaultLimit })),
  query("offset", "Rows to skip, at least 0 (default 0); anything else is 400.", int(undefined, { minimum: 0, default: 0 })),
];

// ---- the document -------------------------------------------------------------------------------------------

export const ERROR_CODES = Object.keys(STATUS_OF_CODE) as ErrorCode[];
export const codesOf = (status: number) => ERROR_CODES.filter((c) => STATUS_OF_CODE[c] === status);

export function errorResponse(status: number, description: string, headers?: Record<string, Schema>): Schema {
  const codes = codesOf(status);
  return json(description, { allOf: [ref("Error")], properties: { code: { enum: codes } } }, headers);
}
