// The console's pages for administrators (contract section 15): users, allowlist, feeds, webhooks with their
// delivery log, jobs (status, run now), threats, bouncers. The router refuses them to other accounts (403).

import { AppError } from "../../domain/errors";
import { parseNewUser, parseUserPatch, TIERS, ROLES } from "../../services/accounts/accounts";
import { BouncerRegistry } from "../../services/bouncers/registry";
import { BouncerTables } from "../../store/bouncers";
import { csrfField, html, type PageContext, table } from "./html";
import type { ConsoleRequest, PageResult } from "./request";

const post = (c: ConsoleRequest, action: string, fields: Record<string, string | number>, label: string) =>
  html`<form method="post" action="${action}" class="inline">${csrfField(c.page)}${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button type="submit" class="secondary">${label}</button></form>`;

export function usersPage(c: ConsoleRequest, flash: PageContext["flash"] = null): PageResult {
  const users = c.services.accounts.list();
  return {
    title: "Users",
    flash,
    body: html`<h2>Add a user</h2>
<form method="post" action="/console/admin/users">${csrfField(c.page)}
<label for="email">Email</label><input id="email" name="email" type="email" required>
<label for="password">Password</label><input id="password" name="password" type="password" minlength="12" required>
<label for="tier">Tier</label><select id="tier" name="tier">${TIERS.map((t) => html`<option>${t}</option>`)}</select>
<label for="role">Role</label><select id="role" name="role">${ROLES.map((r) => html`<option>${r}</option>`)}</select>
<p><button type="submit">Add user</button></p></form>
<h2>Users</h2>
${table(
  ["Email", "Tier", "Role", "Daily limit", "Status", "Change"],
  users.map((u) => [
    u.email,
    u.tier,
    u.role,
    u.dailyLimit ?? "tier's",
    u.disabled ? "disabled" : "enabled",
    html`<form method="post" action="/console/admin/users/change" class="inline">${csrfField(c.page)}<input type="hidden" name="id" value="${u.id}">
<label class="sr" for="tier-${u.id}">Tier</label><select id="tier-${u.id}" name="tier">${TIERS.map((t) => html`<option${t === u.tier ? " selected" : ""}>${t}</option>`)}</select>
<label class="sr" for="role-${u.id}">Role</label><select id="role-${u.id}" name="role">${ROLES.map((r) => html`<option${r === u.role ? " selected" : ""}>${r}</option>`)}</select>
<label class="sr" for="limit-${u.id}">Daily limit</label><input id="limit-${u.id}" name="dailyLimit" type="number" min="1" placeholder="tier's" value="${u.dailyLimit ?? ""}">
<label class="sr" for="disabled-${u.id}">Disabled</label><select id="disabled-${u.id}" name="disabled"><option value="false"${u.disabled ? "" : " selected"}>enabled</option><option value="true"${u.disabled ? " selected" : ""}>disabled</option></select>
<button type="submit" class="secondary">Save</button></form>`,
  ]),
)}`,
  };
}

export async function addUser(c: ConsoleRequest): Promise<PageResult> {
  const f = c.form!;
  const user = await c.services.accounts.create(parseNewUser({ email: f.get("email"), password: f.get("password"), tier: f.get("tier"), role: f.get("role") }));
  return usersPage(c, { kind: "ok", text: `Added ${user.email}.` });
}

export function changeUser(c: ConsoleRequest): PageResult {
  const f = c.form!;
  const id = Number(f.get("id"));
  if (!Number.isInteger(id) || id <= 0) throw new AppError("bad_request", "No such user");
  const limit = (f.get("dailyLimit") ?? "").trim();
  const user = c.services.accounts.update(
    id,
    parseUserPatch({ tier: f.get("tier"), role: f.get("role"), disabled: f.get("disabled") === "true", dailyLimit: limit === "" ? null : Number(limit) }),
  );
  return usersPage(c, { kind: "ok", text: `Saved ${user.email}.` });
}

export function allowlistPage(c: ConsoleRequest, flash: PageContext["flash"] = null): PageResult {
  return {
    title: "Allowlist",
    flash,
    body: html`<form method="post" action="/console/admin/allowlist">${csrfField(c.page)}
<label for="cidr">Address or network</label><input id="cidr" name="cidr" type="text" placeholder="192.0.2.0/24" required>
<label for="note">Note</label><input id="note" name="note" type="text" maxlength="1024">
<p><button type="submit">Allowlist</button></p></form>
${table(["Network", "Note", "Added", ""], c.services.allowlist.list().map((e) => [e.cidr, e.note, e.createdAt, post(c, "/console/admin/allowlist/remove", { id: e.id }, "Remove")]))}`,
  };
}

export function addAllowlist(c: ConsoleRequest): PageResult {
  const entry = c.services.allowlist.add(c.form!.get("cidr") ?? "", c.form!.get("note") ?? "", c.session!.principal.userId);
  return allowlistPage(c, { kind: "ok", text: `${entry.cidr} is allowlisted.` });
}

export function removeAllowlist(c: ConsoleRequest): PageResult {
  if (!c.services.allowlist.remove(c.form!.get("id") ?? "")) throw new AppError("not_found", "No such allowlist entry");
  return allowlistPage(c, { kind: "ok", text: "Removed." });
}

export function feedsPage(c: ConsoleRequest, flash: PageContext["flash"] = null): PageResult {
  return {
    title: "Feeds",
    flash,
    body: html`<p class="muted">Add feeds with <code>abuse-intel feed add</code> or <code>POST /v1/admin/feeds</code>.</p>
${table(
  ["Feed", "Category", "Severity", "Entries", "Source", "Last refresh", "Last error", ""],
  c.services.feeds.list().map((f) => [
    f.name,
    f.category,
    f.severity,
    f.entries,
    f.source === null ? "one-off import" : "url" in f.source ? f.source.url : f.source.file,
    f.lastRefreshAt ?? "never",
    f.lastError ?? "",
    html`${f.source !== null ? post(c, "/console/admin/feeds/refresh", { name: f.name }, "Refresh") : ""} ${post(c, "/console/admin/feeds/remove", { name: f.name }, "Remove")}`,
  ]),
)}`,
  };
}

export async function refreshFeed(c: ConsoleRequest): Promise<PageResult> {
  const name = c.form!.get("name") ?? "";
  const outcome = await c.services.feeds.refresh(name);
  return feedsPage(c, { kind: "ok", text: `${name}: ${JSON.stringify(outcome)}` });
}

export async function removeFeed(c: ConsoleRequest): Promise<PageResult> {
  const name = c.form!.get("name") ?? "";
  await c.services.feeds.removeInTurns(name);
  return feedsPage(c, { kind: "ok", text: `Removed feed ${name}.` });
}

export function webhooksPage(c: ConsoleRequest): PageResult {
  const sections = c.services.accounts.list().flatMap((u) =>
    c.services.webhooks.list(u.id).map((w) => {
      const log = c.services.webhooks.deliveries(u.id, Number(w.id), { limit: 10, offset: 0 });
      return html`<h2>${w.url}</h2><p>${u.email}; events ${w.events.join(", ")}; ${w.active ? "active" : "inactive"}</p>${table(
        ["Delivery", "Event", "Status", "Attempts", "Last error", "Created"],
        log.data.map((d) => [d.deliveryId, d.event, d.status, d.attemptCount, d.lastError ?? "", d.createdAt]),
        `The last 10 of ${log.pagination.total}`,
      )}`;
    }),
  );
  return { title: "Webhooks", body: sections.length > 0 ? html`${sections}` : html`<p class="muted">No webhooks yet.</p>` };
}

export function jobsPage(c: ConsoleRequest, flash: PageContext["flash"] = null): PageResult {
  return {
    title: "Jobs",
    flash,
    body: table(
      ["Job", "Schedule", "Last run", "Last error", "Next run", ""],
      c.services.scheduler.jobs().map((j) => [j.name, j.schedule, j.lastRunAt ?? "never", j.lastError ?? "", j.nextRunAt ?? "", j.running ? "running" : post(c, "/console/admin/jobs/run", { name: j.name }, "Run now")]),
    ),
  };
}

export async function runJob(c: ConsoleRequest): Promise<PageResult> {
  const status = await c.services.scheduler.runNow(c.form!.get("name") ?? "");
  return jobsPage(c, status.lastError ? { kind: "error", text: `${status.name} failed: ${status.lastError}` } : { kind: "ok", text: `${status.name} ran in ${status.lastDurationMs} ms.` });
}

export function threatsPage(c: ConsoleRequest): PageResult {
  const { rows, total } = c.services.threats.list(50, 0);
  return {
    title: "Threats",
    body: table(["Detected", "Kind", "Network", "Category", "Addresses"], rows.map((t) => [t.detectedAt, t.kind, t.cidr, t.category ?? "", t.ipCount]), `The newest 50 of ${total}`),
  };
}

export function bouncersPage(c: ConsoleRequest): PageResult {
  const registry = new BouncerRegistry({ store: c.services.store, tables: new BouncerTables(c.services.store), accounts: c.services.accounts, apiKeys: c.services.apiKeys, clock: c.services.clock });
  return {
    title: "Bouncers",
    body: html`<p class="muted">Add bouncers with <code>abuse-intel bouncer add</code>: it prints the key once, with the bouncer's configuration.</p>${table(
      ["Bouncer", "Mode", "Risk", "Categories", "Duration", "Last pull", "From"],
      registry.list().map((b) => [b.name, b.mode, b.minimumRisk, b.categories?.join(", ") ?? "all", b.duration, b.lastPullAt ?? "never", b.lastPullFrom ?? ""]),
    )}`,
  };
}
