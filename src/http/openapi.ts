// The OpenAPI 3.1 description of every route the app serves (GET /v1/openapi.json), written by hand from the
// contract. test/http/openapi.test.ts fails when a served route is missing here, when a documented one is not
// served, and when a real response does not match its schema. Enumerations come from the domain modules, so
// they cannot drift.

import { ABUSEIPDB_SECURITY_SCHEME, ABUSEIPDB_TAG, abuseIpdbPaths } from "./abuseipdb/openapi";
import { CROWDSEC_SECURITY_SCHEME, CROWDSEC_TAG, crowdsecPaths } from "./crowdsec/openapi";
import { BLOCKLIST_FORMATS, DEFAULT_MINIMUM_RISK } from "../domain/blocklist/query";
import { CATEGORIES } from "../domain/categories";
import { type ErrorCode, STATUS_OF_CODE } from "../domain/errors";
import { MAX_PAGE_LIMIT } from "../domain/pagination";
import { MAX_DESCRIPTION_CHARS, MAX_EVIDENCE_CHARS } from "../domain/report-input";
import { RISK_LEVELS } from "../domain/risk";
import { EVENT_KINDS, MAX_SECRET_LENGTH, MAX_URL_LENGTH, MIN_SECRET_LENGTH } from "../domain/webhook-payload";
import { VERSION } from "../version";
import { JSON_BODY_LIMIT } from "./body";

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it). */
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

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string, extra: Schema = {}): Schema => ({ type: "string", ...(description ? { description } : {}), ...extra });
const int = (description?: string, extra: Schema = {}): Schema => ({ type: "integer", ...(description ? { description } : {}), ...extra });
const bool = (description?: string): Schema => ({ type: "boolean", ...(description ? { description } : {}) });
const time = (description?: string): Schema => ({ type: "string", format: "date-time", ...(description ? { description } : {}) });
const nullable = (schema: Schema): Schema =>
  typeof schema.type === "string"
    ? { ...schema, type: [schema.type, "null"], ...(Array.isArray(schema.enum) ? { enum: [...schema.enum, null] } : {}) }
    : { anyOf: [schema, { type: "null" }], ...(schema.description ? { description: schema.description } : {}) };
const array = (items: Schema, extra: Schema = {}): Schema => ({ type: "array", items, ...extra });
const anyOfSchema = (schemas: Schema[], description: string): Schema => ({ anyOf: schemas, description });
const id = (what: string): Schema => str(`${what} id (a decimal string)`, { pattern: "^[1-9][0-9]*$" });

/** An object whose listed properties are all required unless named in `optional`. */
function obj(properties: Record<string, Schema>, optional: string[] = [], extra: Schema = {}): Schema {
  return { type: "object", required: Object.keys(properties).filter((k) => !optional.includes(k)), properties, ...extra };
}

const TRUE: Schema = { const: true };
/** `{"success": true, "data": ...}`: the envelope of every JSON answer but the flat IP detail record. */
const envelope = (data: Schema): Schema => obj({ success: TRUE, data });
const paged = (item: Schema): Schema => obj({ success: TRUE, data: array(item), pagination: ref("Pagination") });

function json(description: string, schema: Schema, headers?: Record<string, Schema>): Schema {
  return { description, ...(headers ? { headers } : {}), content: { "application/json": { schema } } };
}

const jsonBody = (schema: Schema, description?: string): Schema => ({
  required: true,
  ...(description ? { description } : {}),
  content: { "application/json": { schema } },
});

// ---- operations ---------------------------------------------------------------------------------------------

const SECURITY: Record<Access, Record<string, string[]>[]> = {
  public: [],
  key: [{ ApiKey: [] }, { Bearer: [] }],
  user: [{ Bearer: [] }],
  admin: [{ Bearer: [] }],
  // `{}` makes the token optional: /metrics is open unless the server runs with --metrics-token.
  metrics: [{}, { MetricsToken: [] }],
};

const ACCESS_NOTE: Record<Access, string> = {
  public: "No credential needed; not counted against a rate limit.",
  key: "An API key (`X-API-Key` or `Authorization: Bearer`) or a user access token. Counts 1 against the account's daily budget.",
  user: "A user access token (`Authorization: Bearer <JWT>` from `POST /v1/auth/login`); an API key is refused with 401. Counts 1 against the account's daily budget.",
  admin: "A user access token of an account with role `admin` (403 for other accounts). Counts 1 against the account's daily budget.",
  metrics: "Open, unless the server runs with `--metrics-token`: then `Authorization: Bearer <metrics token>`. Not counted against a rate limit.",
};

const RATE_LIMIT_HEADERS: Record<string, Schema> = {
  "X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
  "X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
  "X-RateLimit-Reset": { $ref: "#/components/headers/X-RateLimit-Reset" },
};

interface OperationSpec {
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

const ERROR_RESPONSE_OF_STATUS: Record<number, string> = {
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

function operation(operationId: string, spec: OperationSpec): Operation {
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

const query = (name: string, description: string, schema: Schema, required = false): Parameter => ({ name, in: "query", required, description, schema });
const pathId = (name: string, description: string, schema: Schema = str()): Parameter => ({ name, in: "path", required: true, description, schema });

const pageParams = (defaultLimit: number): Parameter[] => [
  query("limit", `Rows per page, 1 to ${MAX_PAGE_LIMIT} (default ${defaultLimit}); anything else is 400.`, int(undefined, { minimum: 1, maximum: MAX_PAGE_LIMIT, default: defaultLimit })),
  query("offset", "Rows to skip, at least 0 (default 0); anything else is 400.", int(undefined, { minimum: 0, default: 0 })),
];

// ---- the document -------------------------------------------------------------------------------------------

const ERROR_CODES = Object.keys(STATUS_OF_CODE) as ErrorCode[];
const codesOf = (status: number) => ERROR_CODES.filter((c) => STATUS_OF_CODE[c] === status);

function errorResponse(status: number, description: string, headers?: Record<string, Schema>): Schema {
  const codes = codesOf(status);
  return json(description, { allOf: [ref("Error")], properties: { code: { enum: codes } } }, headers);
}

const schemas: Record<string, Schema> = {
  Error: obj(
    {
      success: { const: false },
      error: str("What went wrong, for a person to read."),
      code: str("Machine-readable error code.", { enum: ERROR_CODES }),
      details: array(ref("FieldError"), { description: "Present on validation failures: one entry per refused field." }),
    },
    ["details"],
    { description: "The body of every non-2xx response (contract section 1). A 500 never holds a stack trace or SQL." },
  ),
  FieldError: obj({ field: str("The field (dotted path), or `(body)`/`(request)` for the whole."), message: str() }),
  IpAddress: str("An IPv4 dotted quad or an IPv6 address, normalized: IPv6 in RFC 5952 form, IPv4-mapped IPv6 as IPv4.", { examples: ["203.0.113.7", "2001:db8::1"] }),
  Category: str("An abuse category. Input is case-insensitive and takes `-` or a space for `_`.", { enum: [...CATEGORIES] }),
  RiskLevel: str("80–100 LOW, 50–79 MEDIUM, 20–49 HIGH, 0–19 CRITICAL (the thresholds in force: GET /v1/scoring).", { enum: [...RISK_LEVELS] }),
  Pagination: obj({ limit: int(), offset: int(), total: int("Rows in the whole list.") }),
  Reputation: obj(
    {
      ipAddress: ref("IpAddress"),
      reputationScore: int("100 = clean, 0 = worst.", { minimum: 0, maximum: 100 }),
      riskLevel: ref("RiskLevel"),
      totalReports: int("Reports that count (pending or verified, not expired)."),
      verifiedReports: int(),
      categories: array(ref("Category")),
      country: nullable(str("ISO 3166-1 alpha-2 country code.")),
      isp: nullable(str()),
      cached: bool("True when served from the response cache (nothing about the address changed since the last lookup)."),
    },
    [],
    { description: "contract 5.2" },
  ),
  IpDetail: obj(
    {
      success: TRUE,
      ip: ref("IpAddress"),
      country: nullable(str("English country name.")),
      countryCode: nullable(str("ISO 3166-1 alpha-2.")),
      city: nullable(str("Only with a MaxMind-format database loaded (--geo-mmdb).")),
      isp: nullable(str()),
      asn: nullable(int()),
      reports: int("Reports that count."),
      verifiedReports: int(),
      threatLevel: str("The risk level in lowercase.", { enum: RISK_LEVELS.map((l) => l.toLowerCase()) }),
      abuse_confidence: int("100 − reputationScore. Integrations block above 80.", { minimum: 0, maximum: 100 }),
      reputationScore: int(undefined, { minimum: 0, maximum: 100 }),
      categories: array(ref("Category")),
      firstSeen: nullable(time("null for an address never reported.")),
      lastSeen: nullable(time()),
      isAllowlisted: bool(),
      networks: array(obj({ cidr: str(), source: str("The feed's name."), category: ref("Category") }), {
        description: "Each feed's listing of a network (or of the address itself) around the address, widest first; [] when none (contract 12).",
      }),
    },
    [],
    { description: "contract 5.1: flat, no `data` envelope." },
  ),
  RecentRow: obj({
    ipAddress: ref("IpAddress"),
    lastReportedAt: nullable(time()),
    category: nullable(ref("Category")),
    categories: array(ref("Category")),
    totalReports: int(),
    reputationScore: int(),
    riskLevel: ref("RiskLevel"),
    country: nullable(str("ISO 3166-1 alpha-2.")),
  }),
  BulkResult: obj({
    results: array(ref("Reputation"), { description: "In request order, duplicates kept." }),
    invalid: array(obj({ input: { description: "The entry as sent." }, error: str() })),
  }),
  Blocklist: obj({
    generatedAt: time("When this list (these filters, this state of the index) was first produced."),
    count: int(),
    filters: obj({ category: nullable(array(ref("Category"))), riskLevel: ref("RiskLevel"), ipVersion: nullable(int(undefined, { enum: [4, 6] })) }),
    ips: array(str("An address, or a listed network in CIDR form.")),
  }),
  CategoryInfo: obj({
    name: ref("Category"),
    description: str(),
    abuseIpdbCategory: nullable(int("The AbuseIPDB category number this category is sent as (null: none of its own; /api/v2 sends MALWARE as 20).")),
    abuseIpdbCategories: array(int(), { description: "Every AbuseIPDB category number (1-23) that maps to this category when received on /api/v2 or in an import." }),
  }),
  ScoringParameters: obj({
    formula: str(),
    halfLifeDays: { type: "number" },
    severityWeights: { type: "object", additionalProperties: { type: "number" }, description: "By severity 1..5." },
    verifiedMultiplier: { type: "number" },
    perReporterCap: { type: "number" },
    scale: { type: "number" },
    retentionDays: { type: "number" },
    riskThresholds: obj({ low: int(), medium: int(), high: int() }),
    riskLevels: array(obj({ level: ref("RiskLevel"), minScore: int(), maxScore: int() })),
  }),
  ReportShapeA: obj(
    {
      ipAddress: ref("IpAddress"),
      category: ref("Category"),
      description: str(undefined, { maxLength: MAX_DESCRIPTION_CHARS }),
      severity: int(undefined, { minimum: 1, maximum: 5 }),
    },
    [],
    { title: "Shape A" },
  ),
  ReportShapeB: obj(
    {
      ip: ref("IpAddress"),
      category: ref("Category"),
      severity: {
        oneOf: [int(undefined, { minimum: 1, maximum: 5 }), str(undefined, { enum: ["low", "medium", "high", "critical"] })],
        description: "1..5, or low=1, medium=3, high=4, critical=5. Default 3.",
        default: 3,
      },
      description: str("Default empty.", { maxLength: MAX_DESCRIPTION_CHARS }),
      evidence: str("Log lines or other evidence.", { maxLength: MAX_EVIDENCE_CHARS }),
    },
    ["severity", "description", "evidence"],
    { title: "Shape B" },
  ),
  ReportAccepted: obj({
    reportId: id("Report"),
    ipAddress: ref("IpAddress"),
    category: ref("Category"),
    severity: int(undefined, { minimum: 1, maximum: 5 }),
    status: { const: "pending" },
    createdAt: time(),
    creditsEarned: int(),
    creditBalance: int(),
  }),
  ReportStatus: str("pending → verified (3 distinct reporters within 7 days, or an admin), pending/verified → rejected (admin), any → expired (retention).", {
    enum: ["pending", "verified", "rejected", "expired"],
  }),
  Report: obj({
    id: id("Report"),
    ipAddress: ref("IpAddress"),
    reporterId: id("User"),
    category: ref("Category"),
    severity: int(undefined, { minimum: 1, maximum: 5 }),
    description: str(),
    evidence: nullable(str()),
    status: ref("ReportStatus"),
    source: str("How it arrived.", { examples: ["api", "abuseipdb", "import"] }),
    createdAt: time(),
    statusChangedAt: time(),
    transitions: array(obj({ from: nullable(ref("ReportStatus")), to: ref("ReportStatus"), at: time(), actorUserId: nullable(str()), reason: nullable(str()) })),
  }),
  CreditBalance: obj({
    balance: int("Sum of every ledger row."),
    lifetimeEarned: int("Sum of the positive rows."),
    reportsAccepted: int(),
    reportsVerified: int(),
    updatedAt: nullable(time()),
  }),
  LedgerEntry: obj({
    id: id("Ledger row"),
    delta: int(),
    reason: str(undefined, { enum: ["report_accepted", "report_verified", "report_rejected", "verification_reversed"] }),
    reportId: nullable(id("Report")),
    createdAt: time(),
  }),
  Login: obj({ email: str(undefined, { format: "email" }), password: str() }),
  AccessToken: obj({
    accessToken: str("An HS256 JWT; send it as `Authorization: Bearer <token>`."),
    tokenType: { const: "Bearer" },
    expiresIn: int("Seconds."),
    expiresAt: time(),
    user: obj({ id: id("User"), email: str(), tier: ref("Tier"), role: ref("Role") }),
  }),
  WhoAmI: obj({ id: id("User"), email: str(), role: ref("Role"), tier: ref("Tier"), via: str("How the request authenticated.", { enum: ["jwt", "api_key", "static_key"] }) }),
  Tier: str("free: 1,000 requests a day; pro: 100,000; enterprise: unlimited.", { enum: ["free", "pro", "enterprise"] }),
  Role: str(undefined, { enum: ["user", "admin"] }),
  ApiKeyCreated: obj({ id: id("API key"), name: str(), key: str("The key: shown only in this response.", { pattern: "^aik_[0-9A-Za-z]{40}$" }), prefix: str(), createdAt: time() }),
  ApiKey: obj({ id: id("API key"), name: str(), prefix: str("The first characters of the key, to recognise it."), createdAt: time(), lastUsedAt: nullable(time()), revokedAt: time() }, ["revokedAt"]),
  User: obj({
    id: id("User"),
    email: str(),
    tier: ref("Tier"),
    role: ref("Role"),
    disabled: bool("A disabled account cannot log in; its tokens and keys are refused."),
    dailyLimit: nullable(int("Overrides the tier's budget; null uses the tier's.")),
    dailyBudget: nullable(int("The budget in force; null is unlimited.")),
    requestsToday: int(),
    createdAt: time(),
    updatedAt: time(),
  }),
  NewUser: obj(
    {
      email: str(undefined, { format: "email" }),
      password: str(undefined, { minLength: 8 }),
      tier: ref("Tier"),
      role: ref("Role"),
      dailyLimit: nullable(int(undefined, { minimum: 0 })),
    },
    ["role", "dailyLimit"],
  ),
  UserPatch: obj({ tier: ref("Tier"), role: ref("Role"), disabled: bool(), dailyLimit: nullable(int(undefined, { minimum: 0 })) }, ["tier", "role", "disabled", "dailyLimit"], {
    minProperties: 1,
  }),
  Feed: obj(
    {
      name: str("The feed's name: `networks[].source` and the reporter `feed:NAME`."),
      category: ref("Category"),
      severity: int("Each listing counts like a verified report of this severity.", { minimum: 1, maximum: 5 }),
      entries: int("Networks and addresses the feed lists now."),
      source: nullable(anyOfSchema([obj({ url: str(undefined, { format: "uri" }) }), obj({ file: str() })], "Where a scheduled feed is refreshed from; null for a one-off import.")),
      schedule: nullable(str("croner pattern, UTC (seconds as a sixth field allowed); null for a one-off import.")),
      updatedAt: time("When the entries were last replaced or added to."),
      lastRefreshAt: nullable(time()),
      lastError: nullable(str("Why the last refresh failed; the previous entries were kept.")),
      badLines: int("Lines skipped as bad in the last import or refresh."),
      nextRefreshAt: nullable(time()),
    },
    [],
    { description: "contract 12" },
  ),
  FeedImport: obj({
    feed: str(),
    imported: int("Distinct entries in the list."),
    entries: int("Entries the feed lists now."),
    lines: int(),
    badLines: int(),
    errors: array(obj({ line: int(), input: str(), error: str() }), { description: "The first 1,000 bad lines." }),
    rescored: int("Reported addresses rescored because a listing around them changed."),
  }),
  FeedRefresh: obj({
    feed: str(),
    result: str(undefined, { enum: ["updated", "unchanged", "failed"] }),
    entries: int(),
    badLines: int(),
    error: nullable(str()),
  }),
  AllowlistEntry: obj({ id: id("Allowlist entry"), cidr: str("A network in CIDR form, or one address."), note: str(), createdAt: time() }),
  EventKind: str(undefined, { enum: [...EVENT_KINDS] }),
  Webhook: obj({ id: id("Webhook"), url: str(undefined, { format: "uri" }), events: array(ref("EventKind")), active: bool(), createdAt: time(), updatedAt: time() }),
  WebhookCreated: obj({
    id: id("Webhook"),
    url: str(undefined, { format: "uri" }),
    events: array(ref("EventKind")),
    active: bool(),
    secret: str("The signing secret: shown only in this response."),
    createdAt: time(),
  }),
  NewWebhook: obj(
    {
      url: str("http or https.", { format: "uri", maxLength: MAX_URL_LENGTH }),
      events: array(ref("EventKind"), { minItems: 1 }),
      secret: nullable(str("Generated when not given.", { minLength: MIN_SECRET_LENGTH, maxLength: MAX_SECRET_LENGTH })),
    },
    ["secret"],
  ),
  WebhookPatch: obj(
    {
      url: str(undefined, { format: "uri", maxLength: MAX_URL_LENGTH }),
      events: array(ref("EventKind"), { minItems: 1 }),
      active: bool(),
      secret: str(undefined, { minLength: MIN_SECRET_LENGTH, maxLength: MAX_SECRET_LENGTH }),
    },
    ["url", "events", "active", "secret"],
    { minProperties: 1 },
  ),
  WebhookDelivery: obj({
    id: id("Delivery"),
    deliveryId: str("The X-Webhook-Delivery header: the same on every retry."),
    event: ref("EventKind"),
    status: str(undefined, { enum: ["pending", "delivered", "failed"] }),
    attemptCount: int(),
    nextAttemptAt: nullable(time("null once delivered or failed.")),
    lastStatusCode: nullable(int()),
    lastError: nullable(str()),
    createdAt: time(),
    updatedAt: time(),
    payload: ref("WebhookEvent"),
    attempts: array(obj({ attemptedAt: time(), statusCode: nullable(int()), error: nullable(str()), durationMs: int() })),
  }),
  PingQueued: obj({ webhookId: id("Webhook"), event: { const: "ping" }, queuedAt: time() }),
  WebhookEvent: obj(
    {
      event: ref("EventKind"),
      timestamp: time(),
      data: obj(
        {
          ip: nullable(str("The address; for threat.detected the network (CIDR).")),
          category: nullable(str("Lowercase (`brute_force`).", { enum: CATEGORIES.map((c) => c.toLowerCase()) })),
          confidence: nullable(int("The address's abuse_confidence at that moment.", { minimum: 0, maximum: 100 })),
          reporter_id: nullable(str()),
          reportId: str(),
          kind: str(undefined, { enum: ["subnet_burst", "category_campaign"] }),
          threatId: str(),
          ipCount: int(),
        },
        ["reportId", "kind", "threatId", "ipCount"],
      ),
    },
    [],
    { description: "The body POSTed to a subscription, signed with X-Webhook-Signature." },
  ),
  Job: obj({
    name: str(undefined, { examples: ["rescore", "verify", "detect-threats", "expire", "snapshot"] }),
    description: str(),
    schedule: str("croner pattern (UTC), or `off`."),
    lastRunAt: nullable(time()),
    lastDurationMs: nullable(int()),
    lastError: nullable(str()),
    lastResult: nullable({ type: "object", description: "What the last successful run did." }),
    nextRunAt: nullable(time()),
    running: bool(),
  }),
  Threat: obj({
    id: id("Threat"),
    kind: str(undefined, { enum: ["subnet_burst", "category_campaign"] }),
    cidr: str(),
    asn: nullable(int()),
    category: nullable(ref("Category")),
    ipCount: int(),
    addresses: array(ref("IpAddress")),
    windowStart: time(),
    windowEnd: time(),
    detectedAt: time(),
  }),
  Health: obj({ success: TRUE, status: { const: "ok" } }),
  Readiness: obj({ success: bool(), status: str(undefined, { enum: ["ready", "starting"] }), checks: obj({ database: bool(), index: bool() }) }),
};

const parameters: Record<string, Parameter> = {
  ip: pathId("ip", "An IPv4 or IPv6 address (IPv6 may be percent-encoded). Leading zeros, zone ids, CIDR notation and whitespace are 400.", ref("IpAddress")),
};

const responses: Record<string, Schema> = {
  BadRequest: errorResponse(400, "Bad request: malformed JSON, an invalid value (`validation_failed` with `details`)."),
  Unauthorized: errorResponse(401, "Missing, unknown, revoked, expired or tampered credential, or an API key where a user token is needed.", {
    "WWW-Authenticate": { schema: { const: "Bearer" } },
  }),
  Forbidden: errorResponse(403, "The account is not an administrator."),
  NotFound: errorResponse(404, "No such resource (or one of another user)."),
  Conflict: errorResponse(409, "The job is running already."),
  PayloadTooLarge: errorResponse(413, `The JSON body is larger than ${JSON_BODY_LIMIT / 1024} KiB.`),
  UnsupportedMediaType: errorResponse(415, "The body is not `application/json`."),
  TooManyRequests: errorResponse(429, "`rate_limited`: the daily budget is spent (or too many failed logins); `duplicate_report`: the same reporter reported the address within 15 minutes.", {
    "Retry-After": { description: "Whole seconds until the request can succeed, at least 1.", schema: { type: "integer", minimum: 1 } },
  }),
  ReadOnly: errorResponse(503, "The server serves a snapshot read-only (`serve --snapshot`)."),
};

const headers: Record<string, Schema> = {
  "X-RateLimit-Limit": { description: "The account's daily budget (absent for unlimited accounts).", schema: { type: "integer" } },
  "X-RateLimit-Remaining": { description: "Requests left today (UTC).", schema: { type: "integer" } },
  "X-RateLimit-Reset": { description: "Unix seconds of the next reset (00:00 UTC).", schema: { type: "integer" } },
};

const CSV_HEADER = "ip,reputationScore,riskLevel,categories,lastSeen";

const paths: Record<string, Record<string, Operation>> = {
  // -- operations
  "/healthz": { get: operation("healthz", { tag: "Operations", access: "public", summary: "Liveness", ok: { 200: json("The process answers.", ref("Health")) } }) },
  "/readyz": {
    get: operation("readyz", {
      tag: "Operations",
      access: "public",
      summary: "Readiness: database open and index built",
      ok: { 200: json("Ready.", ref("Readiness")), 503: json("Not ready yet.", ref("Readiness")) },
    }),
  },
  "/metrics": {
    get: operation("metrics", {
      tag: "Operations",
      access: "metrics",
      summary: "Prometheus metrics",
      description:
        "Prometheus text format 0.0.4. Requests by method, route template and status class " +
        "(`abuse_intel_http_requests_total`) with a duration histogram (`abuse_intel_http_request_duration_seconds`); " +
        "error responses by code and rate-limited responses; reports accepted; webhook deliveries by outcome and attempts; " +
        "index size by family and its generation; scheduled jobs' last run, duration and failure; process memory, CPU and uptime.",
      ok: { 200: { description: "The metrics.", content: { "text/plain; version=0.0.4": { schema: str() } } } },
    }),
  },
  "/v1/openapi.json": {
    get: operation("openapi", { tag: "Operations", access: "public", summary: "This OpenAPI 3.1 document", ok: { 200: json("The document.", { type: "object" }) } }),
  },
  "/docs": {
    get: operation("docs", {
      tag: "Operations",
      access: "public",
      summary: "The API documentation page",
      description: "A self-contained HTML page that renders this document; it needs no internet access.",
      ok: { 200: { description: "HTML.", content: { "text/html": { schema: str() } } } },
    }),
  },
  // -- authentication and keys
  "/v1/auth/login": {
    post: operation("login", {
      tag: "Authentication",
      access: "public",
      summary: "Log in: email and password for a user access token",
      description: "Wrong email and wrong password get the same 401. After 10 failed logins for one email within 15 minutes: 429 with Retry-After.",
      body: jsonBody(ref("Login")),
      ok: { 200: json("The access token.", envelope(ref("AccessToken"))) },
      errors: [401, 429],
    }),
  },
  "/v1/auth/whoami": {
    get: operation("whoami", { tag: "Authentication", access: "key", summary: "Who a credential belongs to", ok: { 200: json("The account.", envelope(ref("WhoAmI"))) } }),
  },
  "/v1/keys": {
    post: operation("createKey", {
      tag: "API keys",
      access: "user",
      summary: "Create an API key (shown once)",
      body: jsonBody(obj({ name: str(undefined, { minLength: 1, maxLength: 100 }) })),
      ok: { 201: json("The key; store it now.", envelope(ref("ApiKeyCreated"))) },
    }),
    get: operation("listKeys", { tag: "API keys", access: "user", summary: "List your API keys (never the keys)", ok: { 200: json("Your keys.", envelope(array(ref("ApiKey")))) } }),
  },
  "/v1/keys/{id}": {
    delete: operation("revokeKey", {
      tag: "API keys",
      access: "user",
      summary: "Revoke an API key",
      params: [pathId("id", "The key's id.")],
      ok: { 200: json("The revoked key.", envelope(ref("ApiKey"))) },
      errors: [404],
    }),
  },
  // -- lookups
  "/v1/ip/{ip}": {
    get: operation("ipDetail", {
      tag: "Lookups",
      access: "key",
      summary: "The IP detail record",
      description: "An address never reported gives 200 with `reports: 0`, `threatLevel: \"low\"`.",
      params: ["ip"],
      ok: { 200: json("The record (flat, no `data` envelope).", ref("IpDetail")) },
      errors: [400],
    }),
  },
  "/v1/ip/{ip}/reputation": {
    get: operation("ipReputation", {
      tag: "Lookups",
      access: "key",
      summary: "The reputation of an address",
      params: ["ip"],
      ok: { 200: json("The reputation.", envelope(ref("Reputation"))) },
      errors: [400],
    }),
  },
  "/v1/ip/recent": {
    get: operation("recent", {
      tag: "Lookups",
      access: "key",
      summary: "Recently reported addresses, newest report first",
      params: pageParams(10),
      ok: { 200: json("One row per address.", paged(ref("RecentRow"))) },
      errors: [400],
    }),
  },
  "/v1/ip/bulk": {
    post: operation("bulk", {
      tag: "Lookups",
      access: "key",
      summary: "Check up to 100 addresses at once",
      description: "Counts 1 against the budget however many addresses it holds. Invalid entries are listed, not fatal.",
      body: jsonBody(obj({ ips: array(str(), { minItems: 1, maxItems: 100 }) })),
      ok: { 200: json("Results in request order.", envelope(ref("BulkResult"))) },
    }),
  },
  "/v1/categories": {
    get: operation("categories", { tag: "Lookups", access: "key", summary: "The abuse categories", ok: { 200: json("Every category.", envelope(array(ref("CategoryInfo")))) } }),
  },
  "/v1/scoring": {
    get: operation("scoring", { tag: "Lookups", access: "key", summary: "The scoring parameters in force", ok: { 200: json("The parameters.", envelope(ref("ScoringParameters"))) } }),
  },
  "/v1/ip/blocklist": {
    get: operation("blocklist", {
      tag: "Blocklists",
      access: "key",
      summary: "A blocklist for firewalls and middleware",
      description:
        "Allowlisted addresses never appear. An address covered by a listed network on the list is left out (the network's line covers it). " +
        "Every response has a strong ETag; `If-None-Match` with the current one gives 304. Long lists are streamed.",
      params: [
        query("category", "One category or a comma-separated list; an address matches when it has any of them.", str()),
        query("riskLevel", `The minimum level: HIGH lists HIGH and CRITICAL. Default ${DEFAULT_MINIMUM_RISK}.`, ref("RiskLevel")),
        query("format", "Output format (default json).", str(undefined, { enum: [...BLOCKLIST_FORMATS], default: "json" })),
        query("ipVersion", "One family; default both.", int(undefined, { enum: [4, 6] })),
        { name: "If-None-Match", in: "header", description: "The ETag of a list you hold.", schema: str() },
      ],
      ok: {
        200: {
          description:
            "`json`: the envelope below. `txt`: one entry per line, sorted (IPv4 then IPv6), ending with a newline. `cidr`: the smallest set of CIDR " +
            `blocks covering the list. \`nft\`: an nftables script (sets abuse_intel_v4/abuse_intel_v6). \`ipset\`: \`ipset restore\` input. \`csv\`: the header \`${CSV_HEADER}\`, then one row per entry.`,
          headers: { ...RATE_LIMIT_HEADERS, ETag: { description: "Strong entity tag of this list.", schema: str() } },
          content: { "application/json": { schema: envelope(ref("Blocklist")) }, "text/plain": { schema: str() }, "text/csv": { schema: str() } },
        },
        304: { description: "Not modified: the list is the one whose ETag was sent." },
      },
      errors: [400],
    }),
  },
  "/v1/threats": {
    get: operation("threats", {
      tag: "Lookups",
      access: "key",
      summary: "Detected threat patterns, newest first",
      description: "`subnet_burst`: at least 5 distinct addresses of one /24 (/64) reported within 60 minutes; `category_campaign`: one category against at least 20 addresses of one ASN within 60 minutes.",
      params: pageParams(20),
      ok: { 200: json("The threats.", paged(ref("Threat"))) },
      errors: [400],
    }),
  },
  // -- reports and credits
  "/v1/ip/report": {
    post: operation("report", {
      tag: "Reports and credits",
      access: "user",
      summary: "Report an abusive address (both payload shapes)",
      description:
        "Shape A `{ipAddress, category, description, severity}` (all required) or shape B `{ip, category, severity?, description?, evidence?}`; " +
        "both `ipAddress` and `ip`, or neither, is 400. Unknown fields are ignored. The report is committed before the 201. " +
        "The same reporter reporting the same address within 15 minutes: 429 `duplicate_report`.",
      body: jsonBody({ oneOf: [ref("ReportShapeA"), ref("ReportShapeB")] }),
      ok: { 201: json("Accepted.", obj({ success: TRUE, reportId: id("Report"), message: { const: "Report accepted" }, data: ref("ReportAccepted") })) },
    }),
  },
  "/v1/credits/balance": {
    get: operation("creditBalance", { tag: "Reports and credits", access: "user", summary: "Your credit balance", ok: { 200: json("The balance.", envelope(ref("CreditBalance"))) } }),
  },
  "/v1/credits/history": {
    get: operation("creditHistory", {
      tag: "Reports and credits",
      access: "user",
      summary: "Your credit ledger, newest first",
      params: pageParams(20),
      ok: { 200: json("Ledger rows.", paged(ref("LedgerEntry"))) },
      errors: [400],
    }),
  },
  // -- webhooks
  "/v1/webhooks": {
    post: operation("createWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Subscribe to events (the secret is shown once)",
      body: jsonBody(ref("NewWebhook")),
      ok: { 201: json("The subscription with its secret.", envelope(ref("WebhookCreated"))) },
    }),
    get: operation("listWebhooks", { tag: "Webhooks", access: "user", summary: "Your subscriptions", ok: { 200: json("Subscriptions.", envelope(array(ref("Webhook")))) } }),
  },
  "/v1/webhooks/{id}": {
    get: operation("getWebhook", { tag: "Webhooks", access: "user", summary: "One subscription", params: ["webhookId"], ok: { 200: json("The subscription.", envelope(ref("Webhook"))) }, errors: [404] }),
    patch: operation("updateWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Change a subscription",
      params: ["webhookId"],
      body: jsonBody(ref("WebhookPatch")),
      ok: { 200: json("The subscription.", envelope(ref("Webhook"))) },
      errors: [404],
    }),
    delete: operation("deleteWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Delete a subscription",
      params: ["webhookId"],
      ok: { 200: json("Deleted.", envelope(obj({ id: id("Webhook"), deleted: { const: true } }))) },
      errors: [404],
    }),
  },
  "/v1/webhooks/{id}/ping": {
    post: operation("pingWebhook", {
      tag: "Webhooks",
      access: "user",
      summary: "Queue a ping event to the subscription",
      params: ["webhookId"],
      ok: { 202: json("Queued.", envelope(ref("PingQueued"))) },
      errors: [400, 404],
    }),
  },
  "/v1/webhooks/{id}/deliveries": {
    get: operation("webhookDeliveries", {
      tag: "Webhooks",
      access: "user",
      summary: "Deliveries of a subscription with their attempts, newest first",
      params: ["webhookId", ...pageParams(20)],
      ok: { 200: json("Deliveries.", paged(ref("WebhookDelivery"))) },
      errors: [400, 404],
    }),
  },
  // -- administration
  "/v1/admin/users": {
    get: operation("listUsers", { tag: "Administration", access: "admin", summary: "List accounts", ok: { 200: json("Accounts.", envelope(array(ref("User")))) } }),
    post: operation("createUser", { tag: "Administration", access: "admin", summary: "Create an account", body: jsonBody(ref("NewUser")), ok: { 201: json("The account (never the password hash).", envelope(ref("User"))) } }),
  },
  "/v1/admin/users/{id}": {
    patch: operation("updateUser", {
      tag: "Administration",
      access: "admin",
      summary: "Change an account: tier, role, disabled, dailyLimit",
      description: "Disabling an account refuses its tokens and keys at once.",
      params: [pathId("id", "The user's id.")],
      body: jsonBody(ref("UserPatch")),
      ok: { 200: json("The account.", envelope(ref("User"))) },
      errors: [404],
    }),
  },
  "/v1/admin/reports/{id}": {
    get: operation("getReport", { tag: "Administration", access: "admin", summary: "One report with its transitions", params: ["reportId"], ok: { 200: json("The report.", envelope(ref("Report"))) }, errors: [404] }),
    patch: operation("setReportStatus", {
      tag: "Administration",
      access: "admin",
      summary: "Verify or reject a report",
      description: "A rejected report no longer counts and its credits are reversed.",
      params: ["reportId"],
      body: jsonBody(obj({ status: str(undefined, { enum: ["verified", "rejected"] }) })),
      ok: { 200: json("The report as it now is.", envelope(ref("Report"))) },
      errors: [404],
    }),
  },
  "/v1/admin/allowlist": {
    get: operation("listAllowlist", { tag: "Administration", access: "admin", summary: "The allowlist", ok: { 200: json("Entries.", envelope(array(ref("AllowlistEntry")))) } }),
    post: operation("addAllowlist", {
      tag: "Administration",
      access: "admin",
      summary: "Allowlist a network: never on a blocklist",
      body: jsonBody(obj({ cidr: str("A network or one address."), note: str() }, ["note"])),
      ok: { 201: json("The entry.", envelope(ref("AllowlistEntry"))) },
    }),
    delete: operation("removeAllowlist", {
      tag: "Administration",
      access: "admin",
      summary: "Remove an allowlist entry by CIDR",
      description: "The CIDR in the JSON body `{\"cidr\"}` or the query `?cidr=`.",
      params: [query("cidr", "The network to remove (or send it in the body).", str())],
      body: { required: false, content: { "application/json": { schema: obj({ cidr: str() }) } } },
      ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) },
      errors: [404],
    }),
  },
  "/v1/admin/allowlist/{id}": {
    delete: operation("removeAllowlistById", {
      tag: "Administration",
      access: "admin",
      summary: "Remove an allowlist entry by id or CIDR",
      params: [pathId("id", "The entry's id, or its CIDR percent-encoded (`10.0.0.0%2F8`).")],
      ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) },
      errors: [404],
    }),
  },
  "/v1/admin/feeds": {
    get: operation("listFeeds", { tag: "Administration", access: "admin", summary: "Feeds with their entries and refresh status", ok: { 200: json("Feeds.", envelope(array(ref("Feed")))) } }),
    post: operation("addFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Add a feed refreshed on a schedule from a URL or a file",
      description:
        "Each refresh replaces the feed's entries; a URL is fetched with If-None-Match / If-Modified-Since. A failed refresh keeps the previous entries and records the error. The feed is refreshed once at once.",
      body: jsonBody(
        obj(
          {
            name: str(undefined, { pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" }),
            url: str("http or https; or give file.", { format: "uri" }),
            file: str("A path on the appliance (a mounted share); or give url."),
            category: ref("Category"),
            severity: int("Default 4.", { minimum: 1, maximum: 5 }),
            schedule: str("croner pattern, UTC; default hourly (`0 * * * *`)."),
          },
          ["url", "file", "severity", "schedule"],
        ),
      ),
      ok: { 201: json("The feed and its first refresh.", envelope(obj({ feed: ref("Feed"), refresh: ref("FeedRefresh") }))) },
    }),
    delete: operation("removeFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Remove a feed and its listings",
      params: [query("name", "The feed (or send `{\"name\"}` in the body).", str())],
      body: { required: false, content: { "application/json": { schema: obj({ name: str() }) } } },
      ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) },
      errors: [404],
    }),
  },
  "/v1/admin/feeds/{name}": {
    get: operation("getFeed", { tag: "Administration", access: "admin", summary: "One feed", params: [pathId("name", "The feed.")], ok: { 200: json("The feed.", envelope(ref("Feed"))) }, errors: [404] }),
    post: operation("importFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Import a list under a feed's name (one-off)",
      description:
        "The body is the list as FireHOL (`.netset`/`.ipset`), Spamhaus (DROP/EDROP/DROPv6, `CIDR ; SBLnnn`) and blocklist.de publish it: one address or CIDR a line, `#` and `;` comments. Bad lines are listed with their numbers and skipped. With `replace=true` the feed's previous entries are swapped for these atomically; a list with no valid entry is then refused.",
      params: [
        pathId("name", "The feed: `networks[].source`, reporter `feed:NAME`."),
        query("category", "The category of every entry.", ref("Category"), true),
        query("severity", "1 to 5 (default 4).", int(undefined, { minimum: 1, maximum: 5, default: 4 })),
        query("replace", "true: replace the feed's entries; false (default): add to them.", str(undefined, { enum: ["true", "false"] })),
      ],
      body: { required: true, content: { "text/plain": { schema: str(undefined, { examples: ["1.10.16.0/20 ; SBL256894\n2001:678:738::/48 ; SBL492470\n5.188.10.179\n"] }) } } },
      ok: { 200: json("What was imported.", envelope(ref("FeedImport"))) },
    }),
    delete: operation("removeFeedByName", { tag: "Administration", access: "admin", summary: "Remove a feed and its listings", params: [pathId("name", "The feed.")], ok: { 200: json("Removed.", envelope(obj({ removed: str() }))) }, errors: [404] }),
  },
  "/v1/admin/feeds/{name}/refresh": {
    post: operation("refreshFeed", {
      tag: "Administration",
      access: "admin",
      summary: "Refresh a scheduled feed now",
      params: [pathId("name", "The feed.")],
      ok: { 200: json("The outcome; a failure keeps the previous entries.", envelope(ref("FeedRefresh"))) },
      errors: [404],
    }),
  },
  "/v1/admin/jobs": {
    get: operation("listJobs", { tag: "Administration", access: "admin", summary: "The scheduled jobs and their last runs", ok: { 200: json("Jobs.", envelope(array(ref("Job")))) } }),
  },
  "/v1/admin/jobs/{name}/run": {
    post: operation("runJob", {
      tag: "Administration",
      access: "admin",
      summary: "Run a job now",
      description: "Answers once the run has finished, with the job's status (a failed run shows `lastError`).",
      params: [pathId("name", "The job.", str(undefined, { examples: ["rescore", "verify", "detect-threats", "expire", "snapshot"] }))],
      ok: { 200: json("The job after the run.", envelope(ref("Job"))) },
      errors: [404, 409],
    }),
  },
};

parameters.webhookId = pathId("id", "The subscription's id.");
parameters.reportId = pathId("id", "The report's id.");

const webhookHeaders = {
  "X-Webhook-Event": { description: "The event kind.", schema: ref("EventKind") },
  "X-Webhook-Delivery": { description: "One id per event and subscription, the same on every retry.", schema: str() },
  "X-Webhook-Timestamp": { description: "When the event happened.", schema: str() },
  "X-Webhook-Signature": { description: "Lowercase hex HMAC-SHA256 of the exact body bytes with the subscription's secret.", schema: str(undefined, { pattern: "^[0-9a-f]{64}$" }) },
};

const webhooks: Record<string, Record<string, Schema>> = Object.fromEntries(
  EVENT_KINDS.map((event) => [
    event,
    {
      post: {
        summary: `The ${event} event, POSTed to each subscription of it`,
        description:
          "Delivered at least once: any 2xx is success; otherwise retried after 10 s, 1 min, 5 min, 30 min, 2 h, 6 h and 12 h, then failed. Timeout 5 s.",
        parameters: Object.entries(webhookHeaders).map(([name, h]) => ({ name, in: "header", required: true, ...h })),
        requestBody: { required: true, content: { "application/json": { schema: ref("WebhookEvent") } } },
        responses: { "2XX": { description: "Delivered." } },
      },
    },
  ]),
);

const DESCRIPTION = `IP reputation for appliances: look addresses up, report abuse, download firewall blocklists, subscribe to events.

**Credentials.** An **API key** (\`aik_\` and 40 characters) in \`X-API-Key\` or \`Authorization: Bearer\` reads (lookups, blocklists,
categories). A **user access token** (a JWT from \`POST /v1/auth/login\`) in \`Authorization: Bearer\` does everything a key does, plus
reports, credits, keys and webhooks; \`/v1/admin/*\` needs an account with role \`admin\`.

**Rate limits.** Every authenticated \`/v1\` request counts 1 against the account's daily budget (free 1,000, pro 100,000, enterprise
unlimited; the UTC day). Counted responses carry \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\`. Login, health
checks, metrics and these docs do not count.

**Errors.** Every non-2xx response is \`{"success": false, "error": "...", "code": "..."}\`; validation failures add \`details\`. Unknown
routes are 404; an unexpected failure is 500 \`internal_error\`.`;

export function buildOpenApiDocument(): OpenApiDocument {
  return {
    openapi: "3.1.0",
    info: { title: "abuse-intel", version: VERSION, description: DESCRIPTION, license: { name: "UNLICENSED" } },
    servers: [{ url: "/", description: "This server" }],
    tags: [
      { name: "Lookups", description: "Reputation of addresses, served from memory." },
      { name: "Blocklists", description: "Lists for firewalls (txt, cidr, nft, ipset, csv, json)." },
      { name: "Reports and credits", description: "Reporting abuse, and the credits it earns." },
      { name: "Authentication", description: "User access tokens." },
      { name: "API keys", description: "Keys for integrations that only read." },
      { name: "Webhooks", description: "Signed event deliveries to your endpoints." },
      { name: "Administration", description: "Accounts, report review, allowlist, scheduled jobs (role admin)." },
      { name: "Operations", description: "Health, metrics and this documentation; no credential, no rate limit." },
      CROWDSEC_TAG,
      ABUSEIPDB_TAG,
    ],
    paths: { ...paths, ...(crowdsecPaths as Record<string, Record<string, Operation>>), ...(abuseIpdbPaths as Record<string, Record<string, Operation>>) },
    webhooks,
    components: {
      schemas,
      parameters,
      responses,
      headers,
      securitySchemes: {
        ApiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "An API key (`aik_…`), from `POST /v1/keys` or `abuse-intel key create`." },
        Bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT or API key",
          description: "A user access token from `POST /v1/auth/login` (a JWT), or an API key. Routes that act for a user need the token.",
        },
        MetricsToken: { type: "http", scheme: "bearer", description: "The server's `--metrics-token` (`ABUSE_INTEL_METRICS_TOKEN`), when it is set." },
        AbuseIpdbKey: ABUSEIPDB_SECURITY_SCHEME,
        CrowdSecKey: CROWDSEC_SECURITY_SCHEME,
      },
    },
  };
}

let cached: string | null = null;

/** The document as JSON, built once: it does not change while the program runs. */
export function openApiJson(): string {
  cached ??= JSON.stringify(buildOpenApiDocument());
  return cached;
}
