// GET /v1/openapi.json and GET /docs (contract section 11): the API description and a page that renders it.
// The page is one self-contained HTML document (inline CSS and script, no external asset), so it works on an
// appliance with no internet access; its Content-Security-Policy allows nothing but itself and this server.

import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import type { Services } from "../../services/services";
import { openApiJson } from "../openapi";

const STYLE = `
:root{--bg:#fff;--fg:#1d2330;--muted:#5d6677;--line:#dfe3ea;--panel:#f6f8fb;--accent:#1f5fbf;--code:#eef1f6}
@media (prefers-color-scheme:dark){:root{--bg:#12151b;--fg:#e3e7ee;--muted:#9aa3b2;--line:#2a303b;--panel:#181c24;--accent:#6ea3ff;--code:#222834}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
a{color:var(--accent)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
code{background:var(--code);padding:1px 4px;border-radius:3px}
header{position:sticky;top:0;z-index:2;display:flex;gap:16px;align-items:center;padding:10px 20px;background:var(--panel);border-bottom:1px solid var(--line)}
header h1{font-size:18px;margin:0}
header .version{color:var(--muted)}
header input{margin-left:auto;width:280px;padding:6px 10px;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
.layout{display:grid;grid-template-columns:300px 1fr;min-height:calc(100vh - 50px)}
nav{border-right:1px solid var(--line);padding:12px 10px;position:sticky;top:50px;height:calc(100vh - 50px);overflow:auto;background:var(--panel)}
nav h3{font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);margin:14px 6px 4px}
nav a{display:flex;gap:6px;align-items:center;padding:3px 6px;border-radius:4px;text-decoration:none;color:var(--fg);font-size:13px;word-break:break-all}
nav a:hover{background:var(--code)}
main{padding:20px 28px;max-width:1100px;min-width:0}
section.tag{margin-bottom:28px}
.op,details,h2{scroll-margin-top:64px}
section.tag>h2{border-bottom:1px solid var(--line);padding-bottom:4px}
.op{border:1px solid var(--line);border-radius:8px;margin:14px 0;overflow:hidden}
.op>.head{display:flex;gap:10px;align-items:center;padding:10px 12px;background:var(--panel);cursor:pointer;flex-wrap:wrap}
.op>.head .path{font-weight:600;word-break:break-all}
.op>.head .summary{color:var(--muted)}
.op>.body{padding:4px 14px 12px;display:none}
.op.open>.body{display:block}
.method{display:inline-block;min-width:58px;text-align:center;font-weight:700;font-size:12px;padding:2px 6px;border-radius:4px;color:#fff;background:#6b7280}
.m-get{background:#1f7a4d}.m-post{background:#1f5fbf}.m-patch{background:#a05a00}.m-put{background:#7a4fbf}.m-delete{background:#b3261e}
.access{font-size:12px;padding:1px 6px;border-radius:10px;border:1px solid var(--line);color:var(--muted)}
h4{margin:14px 0 6px;font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;vertical-align:top;padding:5px 8px;border-bottom:1px solid var(--line)}
th{color:var(--muted);font-weight:600}
.req{color:#b3261e;font-size:11px;margin-left:4px}
.type{color:var(--accent)}
.enum{color:var(--muted)}
.schema{border-left:2px solid var(--line);padding-left:10px;margin:4px 0}
.status{font-weight:700}
.s2{color:#1f7a4d}.s3{color:#a05a00}.s4,.s5{color:#b3261e}
details>summary{cursor:pointer}
.muted{color:var(--muted)}
footer{margin-top:40px;padding-top:12px;border-top:1px solid var(--line);color:var(--muted);font-size:13px}
.error{color:#b3261e;padding:20px}
@media (max-width:800px){.layout{grid-template-columns:1fr}nav{position:static;height:auto}}
`;

const SCRIPT = `
"use strict";
// Relative to where the page is served (/docs, /docs/, or behind a reverse proxy's prefix).
const SPEC_URL = location.pathname.replace(/docs\\/?$/, "") + "v1/openapi.json";
document.getElementById("raw").href = SPEC_URL;
const el = (tag, attrs, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) if (c !== undefined && c !== null && c !== false) node.append(c instanceof Node ? c : String(c));
  return node;
};
// A small Markdown subset (paragraphs, **bold**, \`code\`), built as DOM nodes: no HTML from the document is ever parsed.
function inline(text) {
  const out = [];
  const re = /(\\*\\*[^*]+\\*\\*|\`[^\`]+\`)/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(m[0].startsWith("**") ? el("strong", {}, m[0].slice(2, -2)) : el("code", {}, m[0].slice(1, -1)));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
const markdown = (text) => (text ? String(text).split(/\\n\\s*\\n/).map((p) => el("p", {}, inline(p.replace(/\\n/g, " ")))) : []);
let spec;
const resolve = (s) => {
  if (!s || !s.$ref) return s;
  const parts = s.$ref.replace(/^#\\//, "").split("/");
  let v = spec;
  for (const p of parts) v = v && v[p];
  return v;
};
const refName = (s) => (s && s.$ref ? s.$ref.split("/").pop() : null);
function typeText(s) {
  if (!s) return "any";
  if (s.$ref) return refName(s);
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf || s.oneOf) return (s.anyOf || s.oneOf).map(typeText).join(" | ");
  if (s.allOf) return s.allOf.map(typeText).join(" & ");
  const t = Array.isArray(s.type) ? s.type : [s.type || (s.properties ? "object" : "any")];
  return t.map((x) => (x === "array" ? "array of " + typeText(s.items) : x === "string" && s.format ? "string (" + s.format + ")" : x)).join(" | ");
}
function constraints(s) {
  const bits = [];
  if (s.enum) bits.push("one of: " + s.enum.map((v) => JSON.stringify(v)).join(", "));
  for (const [k, label] of [["minimum", "min"], ["maximum", "max"], ["minLength", "min length"], ["maxLength", "max length"], ["minItems", "min items"], ["maxItems", "max items"], ["default", "default"], ["pattern", "pattern"]]) {
    if (s[k] !== undefined) bits.push(label + " " + (typeof s[k] === "string" ? s[k] : JSON.stringify(s[k])));
  }
  return bits.length ? el("div", { class: "enum mono" }, bits.join("; ")) : null;
}
// Renders a schema: objects as a property table, references as links to their definition, nested up to a depth.
function schemaView(s, depth, seen) {
  seen = seen || [];
  const name = refName(s);
  if (name) {
    const link = el("a", { href: "#schema-" + name, class: "mono" }, name);
    if (depth > 2 || seen.includes(name)) return el("div", { class: "schema" }, link);
    return el("div", { class: "schema" }, link, schemaBody(resolve(s), depth + 1, seen.concat(name)));
  }
  return el("div", { class: "schema" }, schemaBody(s, depth, seen));
}
function schemaBody(s, depth, seen) {
  if (!s) return null;
  const parts = [];
  if (s.description && depth > 0) parts.push(el("div", { class: "muted" }, inline(s.description)));
  const variants = s.oneOf || s.anyOf;
  if (variants && !variants.every((v) => v.type === "null" || (!v.$ref && !v.properties && !v.items))) {
    parts.push(el("div", { class: "muted" }, s.oneOf ? "one of:" : "any of:"));
    for (const v of variants) parts.push(v.type === "null" ? el("div", { class: "mono" }, "null") : schemaView(v, depth, seen));
    return parts;
  }
  if (s.allOf) {
    for (const v of s.allOf) parts.push(schemaView(v, depth, seen));
    if (s.properties) parts.push(propertyTable(s, depth, seen));
    return parts;
  }
  if (s.properties) parts.push(propertyTable(s, depth, seen));
  else if (s.items && (s.items.$ref || s.items.properties)) parts.push(el("div", { class: "mono type" }, "array of:"), schemaView(s.items, depth, seen));
  else parts.push(el("div", { class: "mono type" }, typeText(s)), constraints(s));
  return parts;
}
function propertyTable(s, depth, seen) {
  const required = new Set(s.required || []);
  const rows = Object.entries(s.properties).map(([prop, ps]) => {
    const r = resolve(ps) || {};
    const inner = ps.items || ps;
    // Inline objects always, referenced ones on the first level (the "data" of an envelope): the shape at a glance.
    const expand = inner.properties || (depth < 1 && inner.$ref && (resolve(inner) || {}).properties);
    const nested = expand ? el("div", { class: "schema" }, schemaBody(resolve(inner), depth + 1, inner.$ref ? seen.concat(refName(inner)) : seen)) : null;
    return el("tr", {},
      el("td", { class: "mono" }, prop, required.has(prop) ? el("span", { class: "req" }, "required") : null),
      el("td", { class: "mono type" }, ps.$ref ? el("a", { href: "#schema-" + refName(ps) }, refName(ps)) : typeText(ps)),
      el("td", {}, inline(ps.description || (ps.$ref ? r.description || "" : "")), constraints(ps.$ref ? r : ps), nested));
  });
  return el("table", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "type"), el("th", {}, "meaning")), rows);
}
function parametersView(params) {
  const rows = params.map((p) => resolve(p)).map((p) =>
    el("tr", {},
      el("td", { class: "mono" }, p.name, p.required ? el("span", { class: "req" }, "required") : null),
      el("td", {}, p.in),
      el("td", { class: "mono type" }, typeText(p.schema)),
      el("td", {}, inline(p.description || ""), constraints(resolve(p.schema) || {}))));
  return el("table", {}, el("tr", {}, el("th", {}, "name"), el("th", {}, "in"), el("th", {}, "type"), el("th", {}, "meaning")), rows);
}
function contentView(content) {
  return Object.entries(content || {}).map(([type, media]) => el("div", {}, el("div", { class: "muted mono" }, type), media.schema ? schemaView(media.schema, 0) : null));
}
function responsesView(responses) {
  return Object.entries(responses).map(([status, r0]) => {
    const r = resolve(r0);
    const body = [markdown(r.description), contentView(r.content)];
    if (r.headers) body.push(el("div", { class: "muted" }, "Headers: ", Object.keys(r.headers).map((h, i) => [i ? ", " : "", el("code", {}, h)])));
    return el("details", { open: status.startsWith("2") ? "" : null },
      el("summary", {}, el("span", { class: "status s" + status[0] }, status), " ", refName(r0) ? el("span", { class: "muted" }, refName(r0)) : null),
      body);
  });
}
const ACCESS = { public: "no credential", key: "API key or token", user: "user token", admin: "admin token", metrics: "open or metrics token" };
function operationView(path, method, op) {
  const card = el("div", { class: "op", id: op.operationId, "data-text": (method + " " + path + " " + op.summary).toLowerCase() });
  const head = el("div", { class: "head", onclick: () => card.classList.toggle("open") },
    el("span", { class: "method m-" + method }, method.toUpperCase()),
    el("span", { class: "path mono" }, path),
    el("span", { class: "summary" }, op.summary),
    op["x-access"] ? el("span", { class: "access" }, ACCESS[op["x-access"]] || op["x-access"]) : null);
  const body = el("div", { class: "body" }, markdown(op.description));
  if (op.parameters && op.parameters.length) body.append(el("h4", {}, "Parameters"), parametersView(op.parameters));
  if (op.requestBody) body.append(el("h4", {}, "Request body" + (op.requestBody.required ? "" : " (optional)")), ...contentView(op.requestBody.content));
  body.append(el("h4", {}, "Responses"), ...responsesView(op.responses));
  card.append(head, body);
  return card;
}
function render() {
  document.title = spec.info.title + " " + spec.info.version + " API";
  document.getElementById("title").textContent = spec.info.title + " API";
  document.getElementById("version").textContent = "v" + spec.info.version + " · OpenAPI " + spec.openapi;
  const nav = document.getElementById("nav"), main = document.getElementById("content");
  main.append(el("section", { class: "tag" }, markdown(spec.info.description)));
  const byTag = new Map((spec.tags || []).map((t) => [t.name, { tag: t, ops: [] }]));
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || "Other";
      if (!byTag.has(tag)) byTag.set(tag, { tag: { name: tag }, ops: [] });
      byTag.get(tag).ops.push([path, method, op]);
    }
  }
  for (const { tag, ops } of byTag.values()) {
    if (!ops.length) continue;
    nav.append(el("h3", {}, tag.name));
    const section = el("section", { class: "tag" }, el("h2", {}, tag.name), markdown(tag.description));
    for (const [path, method, op] of ops) {
      nav.append(el("a", { href: "#" + op.operationId, "data-text": (method + " " + path + " " + op.summary).toLowerCase(), onclick: () => document.getElementById(op.operationId).classList.add("open") },
        el("span", { class: "method m-" + method }, method.toUpperCase()), el("span", { class: "mono" }, path)));
      section.append(operationView(path, method, op));
    }
    main.append(section);
  }
  if (spec.webhooks) {
    const section = el("section", { class: "tag" }, el("h2", {}, "Webhook events"), el("p", { class: "muted" }, "What this server POSTs to your subscriptions."));
    nav.append(el("h3", {}, "Webhook events"));
    for (const [name, item] of Object.entries(spec.webhooks)) {
      for (const [method, op] of Object.entries(item)) {
        op.operationId = "webhook-" + name;
        nav.append(el("a", { href: "#" + op.operationId }, el("span", { class: "method m-" + method }, method.toUpperCase()), el("span", { class: "mono" }, name)));
        section.append(operationView(name, method, op));
      }
    }
    main.append(section);
  }
  const schemes = spec.components.securitySchemes || {};
  main.append(el("section", { class: "tag" }, el("h2", { id: "security" }, "Credentials"),
    el("table", {}, el("tr", {}, el("th", {}, "scheme"), el("th", {}, "how"), el("th", {}, "meaning")),
      Object.entries(schemes).map(([name, s]) => el("tr", {}, el("td", { class: "mono" }, name),
        el("td", { class: "mono" }, s.type === "apiKey" ? s.name + ": <key>" : "Authorization: Bearer <" + (s.bearerFormat || "token") + ">"),
        el("td", {}, inline(s.description || "")))))));
  const schemas = el("section", { class: "tag" }, el("h2", { id: "schemas" }, "Schemas"));
  nav.append(el("h3", {}, "Schemas"));
  for (const [name, s] of Object.entries(spec.components.schemas)) {
    nav.append(el("a", { href: "#schema-" + name, "data-text": name.toLowerCase() }, el("span", { class: "mono" }, name)));
    schemas.append(el("details", { id: "schema-" + name }, el("summary", { class: "mono" }, name, " ", el("span", { class: "muted" }, typeText(s))), s.description ? markdown(s.description) : null, schemaView(s, 0, [name])));
  }
  main.append(schemas);
  if (location.hash) openTarget(location.hash.slice(1));
}
function openTarget(id) {
  const target = document.getElementById(id);
  if (!target) return;
  if (target.classList.contains("op")) target.classList.add("open");
  if (target.tagName === "DETAILS") target.open = true;
  target.scrollIntoView();
}
window.addEventListener("hashchange", () => openTarget(location.hash.slice(1)));
document.getElementById("filter").addEventListener("input", (e) => {
  const q = e.target.value.trim().toLowerCase();
  for (const node of document.querySelectorAll("[data-text]")) node.hidden = q !== "" && !node.dataset.text.includes(q);
});
fetch(SPEC_URL, { headers: { accept: "application/json" } })
  .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
  .then((doc) => { spec = doc; render(); })
  .catch((err) => document.getElementById("content").append(el("div", { class: "error" }, "Could not load " + SPEC_URL + ": " + err.message)));
`;

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
