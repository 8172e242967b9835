// Building the console's pages as text (contract section 15): a tagged template that escapes every value it is
// given (only `raw(...)` passes markup through), and the one page layout. No script runs inline: the pages'
// little behaviour (the copy button) is /console/assets/console.js, allowed by the CSP as 'self'.

import type { Principal } from "../../domain/principal";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export class Raw {
  constructor(readonly text: string) {}
}

export const raw = (text: string) => new Raw(text);

export function escape(value: unknown): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function render(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false) return "";
  return escape(value);
}

/** `html\`<p>${text}</p>\``: every interpolation escaped unless it is Raw (or an array of them). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Raw {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Raw(out);
}

export interface PageContext {
  principal: Principal | null;
  /** The session's token against cross-site forms, put into every form. */
  csrf: string;
  /** A message for the top of the page: an error, or what was done. */
  flash?: { kind: "error" | "ok"; text: string } | null;
}

const USER_LINKS: [string, string][] = [
  ["/console", "Overview"],
  ["/console/ip", "IP lookup"],
  ["/console/report", "Report"],
  ["/console/keys", "API keys"],
  ["/console/credits", "Credits"],
  ["/console/blocklist", "Blocklist builder"],
];
const ADMIN_LINKS: [string, string][] = [
  ["/console/admin/users", "Users"],
  ["/console/admin/allowlist", "Allowlist"],
  ["/console/admin/feeds", "Feeds"],
  ["/console/admin/webhooks", "Webhooks"],
  ["/console/admin/jobs", "Jobs"],
  ["/console/admin/threats", "Threats"],
  ["/console/admin/bouncers", "Bouncers"],
];

/** A hidden field with the session's token: every form that changes something carries it. */
export const csrfField = (ctx: PageContext) => html`<input type="hidden" name="csrf" value="${ctx.csrf}">`;

export function page(ctx: PageContext, title: string, body: Raw): string {
  const p = ctx.principal;
  const nav = p
    ? html`<nav aria-label="Console"><ul>${USER_LINKS.map(([href, label]) => html`<li><a href="${href}">${label}</a></li>`)}${
        p.role === "admin" ? ADMIN_LINKS.map(([href, label]) => html`<li><a href="${href}">${label}</a></li>`) : ""
      }</ul><form method="post" action="/logout">${csrfField(ctx)}<button type="submit">Sign out ${p.email}</button></form></nav>`
    : "";
  const flash = ctx.flash ? html`<p class="flash ${ctx.flash.kind}" role="${ctx.flash.kind === "error" ? "alert" : "status"}">${ctx.flash.text}</p>` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · abuse-intel</title>
<link rel="stylesheet" href="/console/assets/console.css">
<link rel="icon" href="data:,">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<header><a class="brand" href="/console">abuse-intel</a></header>
${render(nav)}
<main id="main">
<h1>${escape(title)}</h1>
${render(flash)}
${body.text}
</main>
</body>
</html>`;
}

/** A table from rows of cells (each escaped unless Raw). */
export function table(headers: string[], rows: unknown[][], caption?: string): Raw {
  if (rows.length === 0) return html`<p class="muted">Nothing yet.</p>`;
  return html`<div class="table"><table>${caption ? html`<caption>${caption}</caption>` : ""}<thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead><tbody>${rows.map(
    (r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`,
  )}</tbody></table></div>`;
}
