"use strict";
// Relative to where the page is served (/docs, /docs/, or behind a reverse proxy's prefix).
const SPEC_URL = location.pathname.replace(/docs\/?$/, "") + "v1/openapi.json";
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
// A small Markdown subset (paragraphs, **bold**, `code`), built as DOM nodes: no HTML from the document is ever parsed.
function inline(text) {
  const out = [];
  const re = /(\*\*[^*]+\*\*|`[^`]+`)/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(m[0].startsWith("**") ? el("strong", {}, m[0].slice(2, -2)) : el("code", {}, m[0].slice(1, -1)));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
const markdown = (text) => (text ? String(text).split(/\n\s*\n/).map((p) => el("p", {}, inline(p.replace(/\n/g, " ")))) : []);
let spec;
const resolve = (s) => {
  if (!s || !s.$ref) return s;
  const parts = s.$ref.replace(/^#\//, "").split("/");
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
