// The CrowdSec bouncer routes in the OpenAPI document (contract 14): LAPI's wire format, not `/v1`'s envelope.

type Schema = Record<string, unknown>;

const str = (description?: string): Schema => ({ type: "string", ...(description ? { description } : {}) });
const q = (name: string, description: string, schema: Schema = str()) => ({ name, in: "query", required: false, description, schema });
const DECISION: Schema = {
  type: "object",
  required: ["id", "uuid", "origin", "type", "scope", "value", "duration", "until", "scenario"],
  properties: {
    id: { type: "integer", description: "Stable while the entry stays listed" },
    uuid: str(),
    origin: { const: "abuse-intel" },
    type: { const: "ban" },
    scope: { enum: ["Ip", "Range"] },
    value: str("An address, or a network in CIDR notation"),
    duration: str("A Go duration in whole seconds, e.g. 595h59m59s"),
    until: str("ISO 8601, UTC"),
    scenario: str("abuse-intel/<risk level>; abuse-intel/delisted in deleted"),
  },
};
const FORBIDDEN = { description: "A missing or bad key", content: { "application/json": { schema: { type: "object", properties: { message: { const: "access forbidden" } }, required: ["message"] } } } };

function operation(operationId: string, summary: string, description: string, parameters: Schema[], responses: Schema) {
  return { tags: ["CrowdSec bouncers"], summary, description, operationId, security: [{ CrowdSecKey: [] }], "x-access": "key", parameters, responses: { ...responses, "403": FORBIDDEN } };
}

const STREAM_PARAMS = [
  q("startup", "true on a bouncer's first pull: everything listed, in new"),
  q("scopes", "ip, range or both (default), case-insensitive"),
  q("scenarios_containing", "Comma-separated; decisions whose scenario contains one"),
  q("scenarios_not_containing", "Comma-separated; decisions whose scenario contains none"),
  q("origins", "Accepted, ignored"),
  q("community_pull", "Accepted, ignored"),
  q("additional_pull", "Accepted, ignored"),
];

export const CROWDSEC_TAG = { name: "CrowdSec bouncers", description: "The Local API routes CrowdSec's firewall bouncers use: only api_url and api_key change in their configuration." };

export const CROWDSEC_SECURITY_SCHEME = { type: "apiKey", in: "header", name: "X-Api-Key", description: "An API key, from `abuse-intel bouncer add` (its filter and mode) or any other (the default filter)." };

export const crowdsecPaths: Record<string, Record<string, unknown>> = {
  "/v1/decisions/stream": {
    get: operation(
      "decisionsStream",
      "What entered and left the list since this bouncer's last pull",
      "startup=true (or a key and client address with no cursor yet): everything listed, in new. Otherwise the difference from what was last sent whole; an entry about to run out is sent again in deleted and new. Not counted against the daily budget.",
      STREAM_PARAMS,
      { "200": { description: "Decisions", content: { "application/json": { schema: { type: "object", required: ["new", "deleted"], properties: { new: { type: "array", items: DECISION }, deleted: { type: "array", items: DECISION } } } } } } },
    ),
    head: operation("decisionsStreamHead", "Whether the stream answers", "200 without a body; no cursor moves.", [], { "200": { description: "It does" } }),
  },
  "/v1/decisions": {
    get: operation(
      "decisionsAround",
      "The decisions whose value contains an address or range",
      "The listed address itself and every listed network around it, or null when there are none.",
      [q("ip", "An address"), q("range", "A network in CIDR notation")],
      {
        "200": { description: "Decisions, or null", content: { "application/json": { schema: { anyOf: [{ type: "array", items: DECISION }, { type: "null" }] } } } },
        "400": { description: "Neither ip nor range, or a bad one", content: { "application/json": { schema: { type: "object", properties: { message: str() } } } } },
      },
    ),
  },
  "/v1/usage-metrics": {
    post: operation("usageMetrics", "A bouncer's usage metrics", "Recorded as the bouncer's last report, shown by `bouncer list`; the counters themselves are dropped.", [], {
      "201": { description: "Noted", content: { "application/json": { schema: { type: "object" } } } },
    }),
  },
};
