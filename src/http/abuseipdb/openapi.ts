// The `/api/v2` operations in the OpenAPI document (contract 13): AbuseIPDB's own wire format, so their schemas
// stand apart from `/v1`'s envelope and error body.

type Schema = Record<string, unknown>;

const str = (description?: string): Schema => ({ type: "string", ...(description ? { description } : {}) });
const int = (description?: string): Schema => ({ type: "integer", ...(description ? { description } : {}) });
const obj = (properties: Record<string, Schema>, optional: string[] = []): Schema => ({
  type: "object",
  properties,
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
});
const time = (description = "AbuseIPDB's form: seconds, no fraction, +00:00"): Schema => ({ type: "string", pattern: "^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+00:00$", description });
const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: "null" }] });
const q = (name: string, description: string, schema: Schema = str(), required = false) => ({ name, in: "query", required, description, schema });

const ERRORS: Schema = obj({
  errors: {
    type: "array",
    items: obj({ detail: str(), status: int("The HTTP status, as a number"), source: obj({ parameter: str("The parameter at fault") }) }, ["source"]),
  },
});
const RATE_HEADERS = {
  "X-RateLimit-Limit": { description: "The daily budget (1000000000 for unlimited accounts)", schema: int() },
  "X-RateLimit-Remaining": { description: "Requests left today", schema: int() },
  "X-RateLimit-Reset": { description: "Unix seconds of the next UTC midnight", schema: int() },
};
const errorResponses: Record<string, Schema> = Object.fromEntries(
  [
    ["401", "Authentication failed. Your API key is either missing, incorrect, or revoked."],
    ["404", "Unknown /api/v2 path"],
    ["405", "Wrong method for this path"],
    ["413", "A request body over 16 MiB (with a declared length or chunked); nothing is read past it"],
    ["422", "A bad parameter, named in source.parameter"],
    ["429", "Over the daily budget, or the same address again within 15 minutes (with Retry-After)"],
  ].map(([status, description]) => [status, { description, headers: RATE_HEADERS, content: { "application/json": { schema: ERRORS } } }]),
);
const ok = (description: string, data: Schema, extra: Record<string, unknown> = {}) => ({
  "200": { description, headers: RATE_HEADERS, content: { "application/json": { schema: obj({ data, ...extra }) } } },
  ...errorResponses,
});

const REPORT_ITEM = obj({ reportedAt: time(), comment: str(), categories: { type: "array", items: int("AbuseIPDB category number") }, reporterId: int(), reporterCountryCode: str(), reporterCountryName: str() });
const MAX_AGE = q("maxAgeInDays", "Days of history, 1-365 (default 30)", int());
const IP_ADDRESS = q("ipAddress", "The address", str(), true);

function operation(operationId: string, summary: string, description: string, parameters: Schema[], responses: Schema, requestBody?: Schema) {
  return {
    tags: ["AbuseIPDB v2"],
    summary,
    description,
    operationId,
    security: [{ AbuseIpdbKey: [] }],
    "x-access": "key",
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

const formBody = (properties: Record<string, Schema>, required: string[]) => ({
  content: {
    "application/x-www-form-urlencoded": { schema: { type: "object", properties, required } },
    "multipart/form-data": { schema: { type: "object", properties, required } },
    "application/json": { schema: { type: "object", properties, required } },
  },
});

export const ABUSEIPDB_TAG = { name: "AbuseIPDB v2", description: "AbuseIPDB's API v2, for fail2ban, Wazuh and the client libraries: only the base URL changes." };

export const ABUSEIPDB_SECURITY_SCHEME = { type: "apiKey", in: "header", name: "Key", description: "An API key of this appliance in AbuseIPDB's `Key` header (or `?key=`)." };

export const abuseIpdbPaths: Record<string, Record<string, unknown>> = {
  "/api/v2/check": {
    get: operation(
      "abuseIpdbCheck",
      "What is known of an address",
      "Counts and reports cover the last maxAgeInDays. isp, usageType and domain are strings, never null. `verbose` adds countryName and reports.",
      [IP_ADDRESS, MAX_AGE, q("verbose", "A flag: on when present with any value but false or 0")],
      ok(
        "The address",
        obj(
          {
            ipAddress: str(),
            isPublic: { type: "boolean" },
            ipVersion: { enum: [4, 6] },
            isWhitelisted: { type: "boolean", description: "Allowlisted on this appliance" },
            abuseConfidenceScore: int("100 minus the reputation score; 0 when never reported"),
            countryCode: nullable(str()),
            countryName: nullable(str()),
            usageType: str(),
            isp: str(),
            domain: str(),
            hostnames: { type: "array", items: str() },
            isTor: { type: "boolean" },
            totalReports: int(),
            numDistinctUsers: int(),
            lastReportedAt: nullable(time()),
            reports: { type: "array", items: REPORT_ITEM },
          },
          ["countryName", "reports"],
        ),
      ),
    ),
  },
  "/api/v2/reports": {
    get: operation(
      "abuseIpdbReports",
      "The reports of an address, newest first",
      "Page URLs are absolute, or null.",
      [IP_ADDRESS, MAX_AGE, q("page", "From 1", int()), q("perPage", "1-100 (default 25)", int())],
      ok(
        "A page",
        obj({ total: int(), page: int(), count: int(), perPage: int(), lastPage: int(), nextPageUrl: nullable(str()), previousPageUrl: nullable(str()), results: { type: "array", items: REPORT_ITEM } }),
      ),
    ),
  },
  "/api/v2/blacklist": {
    get: operation(
      "abuseIpdbBlacklist",
      "Addresses at or above a confidence, highest first",
      "Allowlisted addresses never appear; listed networks appear as CIDRs. With `plaintext`: text/plain, one entry a line, no newline after the last, and X-Generated-At.",
      [
        q("confidenceMinimum", "25-100 (default 100)", int()),
        q("limit", "1-999999999999 (default 10000); past the list's length, the whole list (streamed)", int()),
        q("plaintext", "A flag"),
        q("onlyCountries", "Comma-separated country codes"),
        q("exceptCountries", "Comma-separated country codes"),
        q("ipVersion", "4 or 6", { enum: ["4", "6"] }),
      ],
      {
        ...ok("The list", { type: "array", items: obj({ ipAddress: str(), countryCode: nullable(str()), abuseConfidenceScore: int(), lastReportedAt: nullable(time()) }) }, { meta: obj({ generatedAt: time() }) }),
        "200": {
          description: "The list",
          headers: RATE_HEADERS,
          content: {
            "application/json": { schema: obj({ meta: obj({ generatedAt: time() }), data: { type: "array", items: obj({ ipAddress: str(), countryCode: nullable(str()), abuseConfidenceScore: int(), lastReportedAt: nullable(time()) }) } }) },
            "text/plain": { schema: str("With plaintext") },
          },
        },
      },
    ),
  },
  "/api/v2/report": {
    post: operation(
      "abuseIpdbReport",
      "Report an address",
      "One report of ours per distinct category, severity 3, through the same intake as POST /v1/ip/report (credits, webhook events, the 15-minute rule). A comment over 1,024 characters is cut. Fields may also come in the query string.",
      [],
      ok("The address's confidence after the report", obj({ ipAddress: str(), abuseConfidenceScore: int() })),
      formBody({ ip: str(), categories: str("AbuseIPDB numbers 1-23, comma-separated"), comment: str(), timestamp: str("ISO 8601; checked, not kept") }, ["ip", "categories"]),
    ),
  },
  "/api/v2/check-block": {
    get: operation(
      "abuseIpdbCheckBlock",
      "The reported addresses inside a block",
      "At most a /16 (IPv4) or /48 (IPv6); numPossibleHosts counts every address of the block.",
      [q("network", "A CIDR, e.g. 127.0.0.1/24", str(), true), MAX_AGE],
      ok(
        "The block",
        obj({
          networkAddress: str(),
          netmask: str(),
          minAddress: str(),
          maxAddress: str(),
          numPossibleHosts: int(),
          addressSpaceDesc: str(),
          reportedAddress: { type: "array", items: obj({ ipAddress: str(), numReports: int(), mostRecentReport: time(), abuseConfidenceScore: int(), countryCode: nullable(str()) }) },
        }),
      ),
    ),
  },
  "/api/v2/bulk-report": {
    post: operation(
      "abuseIpdbBulkReport",
      "Report many addresses from a CSV",
      "Multipart field `csv`: IP,Categories,ReportDate,Comment, at most 10,000 lines. rowNumber is the line of the file (the header is line 1). Each row is a report of its own: a good row that could not be written (`Not Saved: Disk Full`, `Not Saved: Database Busy`, `Not Saved: Internal Error`) is listed beside the rows saved; when no row could be written, the answer is the error (503).",
      [],
      ok("What was saved", obj({ savedReports: int(), invalidReports: { type: "array", items: obj({ error: str(), input: str(), rowNumber: int() }) } })),
      { content: { "multipart/form-data": { schema: { type: "object", properties: { csv: { type: "string", format: "binary" } }, required: ["csv"] } } } },
    ),
  },
  "/api/v2/clear-address": {
    delete: operation(
      "abuseIpdbClearAddress",
      "Delete the reports of an address",
      "An admin's key clears every report of the address, anyone else's only their own; the address is rescored at once. What the deleted reports earned is taken back (a `report_cleared` ledger row each), and their reporters still may not report the address again within 15 minutes of them.",
      [IP_ADDRESS],
      ok("How many reports were deleted", obj({ numReportsDeleted: int() })),
    ),
  },
};
