// GET /v1/openapi.json and GET /docs (contract section 11): the API description and a page that renders it.
// The page is one self-contained HTML document (its CSS and script, from assets/, inlined), so it works on an
// appliance with no internet access; its Content-Security-Policy allows nothing but itself and this server.

import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import type { Services } from "../../services/services";
import { openApiJson } from "../openapi";
// The page's style and script are files of their own, carried inside the executable as text by the bundler.
import STYLE from "../assets/docs.css" with { type: "text" };
import SCRIPT from "../assets/docs.js" with { type: "text" };



/** Hash sources for the Content-Security-Policy: the page may run exactly its own inline script and style. */
const cspHash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

export const DOCS_CSP = [
  "default-src 'none'",
  `script-src ${cspHash(SCRIPT)}`,
  `style-src ${cspHash(STYLE)}`,
  "connect-src 'self'",
  "img-src data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>abuse-intel API</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header><h1 id="title">abuse-intel API</h1><span class="version" id="version"></span><a id="raw" href="v1/openapi.json">openapi.json</a><input id="filter" type="search" placeholder="Filter endpoints and schemas" aria-label="Filter"></header>
<div class="layout">
<nav id="nav" aria-label="Endpoints"></nav>
<main id="content">
<noscript><p>This page renders <a href="v1/openapi.json">the OpenAPI document</a> with JavaScript.</p></noscript>
</main>
</div>
<footer class="layout"><div></div><div>
<p>Country data: ip-location-db <code>geo-whois-asn-country</code> (CC0; NRO statistics data, CC BY 4.0). ASN and ISP data: ip-location-db <code>asn</code> (CC BY 4.0), made from RouteViews, the RIRs' data and the DB-IP IP to ASN Lite database. <a href="https://db-ip.com">IP Geolocation by DB-IP</a></p>
</div></footer>
<script>${SCRIPT}</script>
</body>
</html>
`;

export function docsRoutes(_services: Services) {
  return new Elysia()
    .get("/v1/openapi.json", () => new Response(openApiJson(), { headers: { "content-type": "application/json; charset=utf-8" } }))
    .get(
      "/docs",
      () =>
        new Response(DOCS_HTML, {
          headers: {
            "content-type": "text/html; charset=utf-8",
            "content-security-policy": DOCS_CSP,
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
          },
        }),
    );
}
