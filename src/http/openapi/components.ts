// The reusable parts of the OpenAPI document: schemas, parameters, error responses, headers, and the webhook
// events. Enumerations come from the domain modules, so they cannot drift.

import { CATEGORIES } from "../../domain/categories";
import { MAX_DESCRIPTION_CHARS, MAX_EVIDENCE_CHARS } from "../../domain/report-input";
import { RISK_LEVELS } from "../../domain/risk";
import { EVENT_KINDS, MAX_SECRET_LENGTH, MAX_URL_LENGTH, MIN_SECRET_LENGTH } from "../../domain/webhook-payload";
import { JSON_BODY_LIMIT } from "../body";
import { type Schema, type Parameter, ref, str, int, bool, time, nullable, array, anyOfSchema, id, obj, TRUE, envelope, pathId, ERROR_CODES, errorResponse } from "./schema";

export const schemas: Record<string, Schema> = {
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
  RecentPagination: obj({
    limit: int(),
    offset: int(),
    total: int("Rows in the whole list."),
    next: nullable(str("Send as `cursor` for the page after this one (as fast however deep); null after the last page.")),
  }),
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
    reason: str(undefined, { enum: ["report_accepted", "report_verified", "report_rejected", "verification_reversed", "report_cleared"] }),
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

export const parameters: Record<string, Parameter> = {
  ip: pathId("ip", "An IPv4 or IPv6 address (IPv6 may be percent-encoded). Leading zeros, zone ids, CIDR notation and whitespace are 400.", ref("IpAddress")),
};

export const responses: Record<string, Schema> = {
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

export const headers: Record<string, Schema> = {
  "X-RateLimit-Limit": { description: "The account's daily budget (absent for unlimited accounts).", schema: { type: "integer" } },
  "X-RateLimit-Remaining": { description: "Requests left today (UTC).", schema: { type: "integer" } },
  "X-RateLimit-Reset": { description: "Unix seconds of the next reset (00:00 UTC).", schema: { type: "integer" } },
};

export const CSV_HEADER = "ip,reputationScore,riskLevel,categories,lastSeen";

parameters.webhookId = pathId("id", "The subscription's id.");
parameters.reportId = pathId("id", "The report's id.");

export const webhookHeaders = {
  "X-Webhook-Event": { description: "The event kind.", schema: ref("EventKind") },
  "X-Webhook-Delivery": { description: "One id per event and subscription, the same on every retry.", schema: str() },
  "X-Webhook-Timestamp": { description: "When the event happened.", schema: str() },
  "X-Webhook-Signature": { description: "Lowercase hex HMAC-SHA256 of the exact body bytes with the subscription's secret.", schema: str(undefined, { pattern: "^[0-9a-f]{64}$" }) },
};

export const webhooks: Record<string, Record<string, Schema>> = Object.fromEntries(
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
