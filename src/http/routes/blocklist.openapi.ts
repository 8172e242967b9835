// The OpenAPI operations of the routes in blocklist.ts (GET /v1/openapi.json), beside the routes they document.

import { BLOCKLIST_FORMATS, DEFAULT_MINIMUM_RISK } from "../../domain/blocklist/query";
import { type Operation, ref, str, int, envelope, json, RATE_LIMIT_HEADERS, operation, query } from "../openapi/schema";
import { CSV_HEADER } from "../openapi/components";

export const blocklistPaths: Record<string, Record<string, Operation>> = {
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
};
