// The OpenAPI 3.1 description of every route the server answers (GET /v1/openapi.json), assembled from the
// operations each route module documents beside itself (routes/*.openapi.ts) and the shared components
// (openapi/). test/http/openapi.test.ts fails when a served route is missing, when a documented one is not
// served, and when a real response does not match its schema.

import { ABUSEIPDB_SECURITY_SCHEME, ABUSEIPDB_TAG, abuseIpdbPaths } from "./abuseipdb/openapi";
import { CROWDSEC_SECURITY_SCHEME, CROWDSEC_TAG, crowdsecPaths } from "./crowdsec/openapi";
import { VERSION } from "../version";
import { type Operation, type OpenApiDocument, json } from "./openapi/schema";
import { schemas, parameters, responses, headers, webhooks } from "./openapi/components";
import { healthPaths } from "./routes/health.openapi";
import { metricsPaths } from "./routes/metrics.openapi";
import { docsPaths } from "./routes/docs.openapi";
import { authPaths } from "./routes/auth.openapi";
import { keysPaths } from "./routes/keys.openapi";
import { lookupsPaths } from "./routes/lookups.openapi";
import { blocklistPaths } from "./routes/blocklist.openapi";
import { threatsPaths } from "./routes/threats.openapi";
import { reportsPaths } from "./routes/reports.openapi";
import { forwardedReportsPaths } from "./routes/forwarded-reports.openapi";
import { webhooksPaths } from "./routes/webhooks.openapi";
import { adminUsersPaths } from "./routes/admin-users.openapi";
import { allowlistPaths } from "./routes/allowlist.openapi";
import { feedsPaths } from "./routes/feeds.openapi";
import { jobsPaths } from "./routes/jobs.openapi";
import { snapshotsPaths } from "./routes/snapshots.openapi";

const DESCRIPTION = `IP reputation for appliances: look addresses up, report abuse, download firewall blocklists, subscribe to events.

**Credentials.** An **API key** (\`aik_\` and 40 characters) in \`X-API-Key\` or \`Authorization: Bearer\` reads (lookups, blocklists,
categories). A **user access token** (a JWT from \`POST /v1/auth/login\`) in \`Authorization: Bearer\` does everything a key does, plus
reports, credits, keys and webhooks; \`/v1/admin/*\` needs an account with role \`admin\`.

**Rate limits.** Every authenticated \`/v1\` request counts 1 against the account's daily budget (free 1,000, pro 100,000, enterprise
unlimited; the UTC day). Counted responses carry \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\`. Login, health
checks, metrics and these docs do not count.

**Errors.** Every non-2xx response is \`{"success": false, "error": "...", "code": "..."}\`; validation failures add \`details\`. Unknown
routes are 404; an unexpected failure is 500 \`internal_error\`.`;

/** Every route module's operations, in the order the docs page lists them. */
function paths(): Record<string, Record<string, Operation>> {
  return { ...healthPaths, ...metricsPaths, ...docsPaths, ...authPaths, ...keysPaths, ...lookupsPaths, ...blocklistPaths, ...threatsPaths, ...reportsPaths, ...forwardedReportsPaths, ...webhooksPaths, ...adminUsersPaths, ...allowlistPaths, ...feedsPaths, ...jobsPaths, ...snapshotsPaths };
}

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
    paths: { ...paths(), ...(crowdsecPaths as Record<string, Record<string, Operation>>), ...(abuseIpdbPaths as Record<string, Record<string, Operation>>) },
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
