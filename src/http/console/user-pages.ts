// The console's pages for every user (contract section 15): overview with today's budget, the IP page, the report
// form, API keys (a new key shown once, with a copy button), credits, and the blocklist builder. Each page is a
// function of the request; what changes something is a POST, answered with the page and a message.

import { CATEGORIES, CATEGORY_INFO } from "../../domain/categories";
import { AppError } from "../../domain/errors";
import { tryParseIp } from "../../domain/ip";
import { parseReportInput } from "../../domain/report-input";
import { RISK_LEVELS } from "../../domain/risk";
import { isoTime } from "../../domain/clock";
import { AddressReports } from "../../store/address-reports";
import { parseKeyName } from "../../services/accounts/api-keys";
import { csrfField, html, page, type PageContext, table } from "./html";
import type { ConsoleRequest, PageResult } from "./request";

const SEVERITIES = [1, 2, 3, 4, 5];

export function overviewPage(c: ConsoleRequest): PageResult {
  const p = c.session!.principal;
  const used = c.services.rateLimiter.used(p.userId);
  const balance = c.services.credits.balance(p.userId);
  const budget = p.dailyBudget === null ? html`unlimited (${used} requests today)` : html`${used} of ${p.dailyBudget} requests used today (UTC)`;
  return {
    title: "Overview",
    body: html`<dl>
<dt>Account</dt><dd>${p.email}</dd>
<dt>Tier</dt><dd>${p.tier}</dd>
<dt>Role</dt><dd>${p.role}</dd>
<dt>Daily budget</dt><dd id="budget">${budget}</dd>
<dt>Credits</dt><dd>${balance.balance} (<a href="/console/credits">ledger</a>)</dd>
</dl>
<form method="get" action="/console/ip"><label for="ip">Look up an address</label><input id="ip" name="ip" type="search" placeholder="203.0.113.7" required> <button type="submit">Look up</button></form>`,
  };
}

export function ipPage(c: ConsoleRequest): PageResult {
  const text = (c.url.searchParams.get("ip") ?? "").trim();
  const form = html`<form method="get" action="/console/ip"><label for="ip">Address</label><input id="ip" name="ip" type="search" value="${text}" placeholder="203.0.113.7" required> <button type="submit">Look up</button></form>`;
  if (text === "") return { title: "IP lookup", body: form };
  const ip = tryParseIp(text);
  if (typeof ip === "string") throw new AppError("bad_request", `"${text}" is not a valid IP address: ${ip}`);
  const d = c.services.reputation.detail(ip);
  const reports = c.services.config.snapshot === null ? new AddressReports(c.services.store).pageSince(ip.text, 0, 20, 0) : [];
  return {
    title: `IP ${ip.text}`,
    body: html`${form}
<h2>Reputation</h2>
<dl id="reputation">
<dt>Reputation score</dt><dd>${d.reputationScore} (${d.threatLevel.toUpperCase()})</dd>
<dt>Reports</dt><dd>${d.reports} (${d.verifiedReports} verified)</dd>
<dt>Categories</dt><dd>${d.categories.join(", ") || "none"}</dd>
<dt>First seen</dt><dd>${d.firstSeen ?? "never"}</dd>
<dt>Last seen</dt><dd>${d.lastSeen ?? "never"}</dd>
<dt>Allowlisted</dt><dd>${d.isAllowlisted ? "yes" : "no"}</dd>
</dl>
<h2>Enrichment</h2>
<dl><dt>Country</dt><dd>${d.country ?? "unknown"} ${d.countryCode ? html`(${d.countryCode})` : ""}</dd><dt>ISP</dt><dd>${d.isp ?? "unknown"}</dd><dt>ASN</dt><dd>${d.asn ?? "unknown"}</dd><dt>City</dt><dd>${d.city ?? "unknown"}</dd></dl>
<h2>Listed networks</h2>
${table(["Network", "Feed", "Category"], d.networks.map((n) => [n.cidr, n.source, n.category]))}
<h2>Recent reports</h2>
${table(["Reported", "Category", "Description"], reports.map((r) => [isoTime(r.createdAt), r.category, r.description]), "Newest first")}
<p><a href="/console/report?ip=${ip.text}">Report this address</a></p>`,
  };
}

export function reportPage(c: ConsoleRequest, flash: PageContext["flash"] = null): PageResult {
  const ip = c.url.searchParams.get("ip") ?? "";
  return {
    title: "Report an address",
    flash,
    body: html`<form method="post" action="/console/report">${csrfField(c.page)}
<label for="ipAddress">Address</label><input id="ipAddress" name="ipAddress" type="text" value="${ip}" required>
<label for="category">Category</label><select id="category" name="category">${CATEGORY_INFO.map((x) => html`<option value="${x.name}">${x.name}: ${x.description}</option>`)}</select>
<label for="severity">Severity</label><select id="severity" name="severity">${SEVERITIES.map((s) => html`<option value="${s}"${s === 3 ? " selected" : ""}>${s}</option>`)}</select>
<label for="description">Description</label><textarea id="description" name="description" rows="4" maxlength="1024" required></textarea>
<p><button type="submit">Report</button></p></form>`,
  };
}

export async function submitReport(c: ConsoleRequest): Promise<PageResult> {
  const f = c.form!;
  const input = parseReportInput({ ipAddress: f.get("ipAddress"), category: f.get("category"), description: f.get("description") ?? "", severity: Number(f.get("severity")) });
  const accepted = await c.services.reports.submit(c.session!.principal.userId, input);
  return reportPage(c, { kind: "ok", text: `Report ${accepted.reportId} accepted for ${accepted.ipAddress}: +${accepted.creditsEarned} credit (balance ${accepted.creditBalance}).` });
}

export function keysPage(c: ConsoleRequest, created: { key: string; name: string } | null = null, flash: PageContext["flash"] = null): PageResult {
  const p = c.session!.principal;
  const keys = c.services.apiKeys.listForUser(p.userId);
  const shown = created
    ? html`<section aria-labelledby="new-key"><h2 id="new-key">New key "${created.name}"</h2><p>Copy it now: it is shown only this once.</p><div class="key"><code id="api-key">${created.key}</code><button type="button" class="secondary" data-copy="api-key">Copy</button></div></section>`
    : "";
  return {
    title: "API keys",
    flash,
    body: html`${shown}
<form method="post" action="/console/keys">${csrfField(c.page)}<label for="name">New key's name</label><input id="name" name="name" type="text" maxlength="100" required> <button type="submit">Create key</button></form>
<h2>Your keys</h2>
${table(
  ["Name", "Prefix", "Created", "Last used", ""],
  keys.map((k) => [
    k.name,
    html`<code>${k.prefix}…</code>`,
    isoTime(k.createdAt),
    k.lastUsedAt === null ? "never" : isoTime(k.lastUsedAt),
    html`<form method="post" action="/console/keys/revoke" class="inline">${csrfField(c.page)}<input type="hidden" name="id" value="${k.id}"><button type="submit" class="secondary" aria-label="Revoke ${k.name}">Revoke</button></form>`,
  ]),
)}`,
  };
}

export function createKey(c: ConsoleRequest): PageResult {
  // The API's rule (no control characters either: a name is printed by `abuse-intel key list` on a terminal).
  let name: string;
  try {
    name = parseKeyName(c.form!.get("name") ?? "");
  } catch (error) {
    // parseKeyName names the problem in its details ("must not contain control characters").
    throw new AppError("bad_request", `A key's name ${(error as AppError).details![0].message}`);
  }
  const { key } = c.services.apiKeys.create(c.session!.principal.userId, name);
  return keysPage(c, { key, name }, { kind: "ok", text: `Key "${name}" created.` });
}

export function revokeKey(c: ConsoleRequest): PageResult {
  const id = Number(c.form!.get("id"));
  if (!Number.isInteger(id) || id <= 0) throw new AppError("bad_request", "No such key");
  const record = c.services.apiKeys.revoke(id, c.session!.principal.userId);
  return keysPage(c, null, { kind: "ok", text: `Key "${record.name}" revoked: requests with it are refused from now on.` });
}

export function creditsPage(c: ConsoleRequest): PageResult {
  const p = c.session!.principal;
  const b = c.services.credits.balance(p.userId);
  const ledger = c.services.credits.history(p.userId, 50, 0);
  return {
    title: "Credits",
    body: html`<dl><dt>Balance</dt><dd id="balance">${b.balance}</dd><dt>Earned in all</dt><dd>${b.lifetimeEarned}</dd><dt>Reports accepted</dt><dd>${b.reportsAccepted}</dd><dt>Reports verified</dt><dd>${b.reportsVerified}</dd></dl>
<h2>Ledger</h2>
${table(["When", "Change", "Why", "Report"], ledger.entries.map((e) => [e.createdAt, e.delta > 0 ? `+${e.delta}` : e.delta, e.reason, e.reportId ?? ""]), `Newest first (${ledger.total} in all)`)}`,
  };
}

export function blocklistPage(c: ConsoleRequest): PageResult {
  const q = c.url.searchParams;
  const risk = RISK_LEVELS.includes(q.get("riskLevel") as (typeof RISK_LEVELS)[number]) ? (q.get("riskLevel") as string) : "HIGH";
  const chosen = q.getAll("category").filter((x) => (CATEGORIES as readonly string[]).includes(x));
  const version = q.get("ipVersion") === "4" || q.get("ipVersion") === "6" ? (q.get("ipVersion") as string) : "";
  const origin = `${c.url.protocol}//${c.request.headers.get("host") ?? c.url.host}`;
  const params = (format: string) => {
    const s = new URLSearchParams({ format, riskLevel: risk });
    if (chosen.length > 0) s.set("category", chosen.join(","));
    if (version !== "") s.set("ipVersion", version);
    return s.toString();
  };
  const url = (format: string) => `${origin}/v1/ip/blocklist?${params(format)}`;
  return {
    title: "Blocklist builder",
    body: html`<form method="get" action="/console/blocklist">
<label for="riskLevel">Risk level and worse</label><select id="riskLevel" name="riskLevel">${RISK_LEVELS.map((r) => html`<option${r === risk ? " selected" : ""}>${r}</option>`)}</select>
<label for="category">Categories (none: all)</label><select id="category" name="category" multiple size="6">${CATEGORIES.map((x) => html`<option${chosen.includes(x) ? " selected" : ""}>${x}</option>`)}</select>
<label for="ipVersion">Addresses</label><select id="ipVersion" name="ipVersion"><option value=""${version === "" ? " selected" : ""}>IPv4 and IPv6</option><option value="4"${version === "4" ? " selected" : ""}>IPv4</option><option value="6"${version === "6" ? " selected" : ""}>IPv6</option></select>
<p><button type="submit">Build</button></p></form>
<h2>URL</h2><pre id="url-txt">${url("txt")}</pre>
<h2>curl</h2><pre id="curl">curl -H "X-API-Key: $KEY" '${url("txt")}'</pre>
<h2>nftables</h2><pre id="nft">curl -s -H "X-API-Key: $KEY" '${url("nft")}' | nft -f -</pre>
<h2>ipset</h2><pre id="ipset">curl -s -H "X-API-Key: $KEY" '${url("ipset")}' | ipset restore</pre>
<h2>CrowdSec bouncer</h2><pre id="bouncer">abuse-intel bouncer add NAME --mode ipset --risk-level ${risk}${chosen.length > 0 ? ` --category ${chosen.join(",")}` : ""} --url ${origin}/</pre>
<p class="muted">Make a key for a firewall on the <a href="/console/keys">API keys</a> page.</p>`,
  };
}
