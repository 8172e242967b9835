// The web console at `/` (contract section 15), served by the executable with every asset inside it: sign in and
// out, the user pages, and the admin pages. Served on Bun's router ahead of the Elysia app, as HTML: an error is a
// message on the page (never JSON or a stack), a missing session a redirect to the sign-in page, a form from
// another site a 403 page. Every page carries a Content-Security-Policy that allows nothing but this origin.

import { AppError } from "../../domain/errors";
import type { Services } from "../../services/services";
import CONSOLE_CSS from "../assets/console.css" with { type: "text" };
import CONSOLE_JS from "../assets/console.js" with { type: "text" };
import { toAppError } from "../errors";
import { formOf, readLimited } from "../body";
import { readOnlyRefusal } from "../read-only";
import { type RequestOutcomes, requestOutcomes } from "../request-outcomes";
import * as admin from "./admin-pages";
import { html, page, type PageContext, type Raw } from "./html";
import type { ConsoleRequest, PageResult } from "./request";
import { ConsoleSessions, sameOrigin, type Session } from "./session";
import * as user from "./user-pages";

type Handler = (c: ConsoleRequest) => PageResult | Promise<PageResult>;

export const CONSOLE_CSP = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const SECURITY_HEADERS = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

const USER_GET: Record<string, Handler> = {
  "/console": user.overviewPage,
  "/console/ip": user.ipPage,
  "/console/report": (c) => user.reportPage(c),
  "/console/keys": (c) => user.keysPage(c),
  "/console/credits": user.creditsPage,
  "/console/blocklist": user.blocklistPage,
};
const USER_POST: Record<string, Handler> = {
  "/console/report": user.submitReport,
  "/console/keys": user.createKey,
  "/console/keys/revoke": user.revokeKey,
};
const ADMIN_GET: Record<string, Handler> = {
  "/console/admin/users": (c) => admin.usersPage(c),
  "/console/admin/allowlist": (c) => admin.allowlistPage(c),
  "/console/admin/feeds": (c) => admin.feedsPage(c),
  "/console/admin/webhooks": admin.webhooksPage,
  "/console/admin/jobs": (c) => admin.jobsPage(c),
  "/console/admin/threats": admin.threatsPage,
  "/console/admin/bouncers": admin.bouncersPage,
};
const ADMIN_POST: Record<string, Handler> = {
  "/console/admin/users": admin.addUser,
  "/console/admin/users/change": admin.changeUser,
  "/console/admin/allowlist": admin.addAllowlist,
  "/console/admin/allowlist/remove": admin.removeAllowlist,
  "/console/admin/feeds/refresh": admin.refreshFeed,
  "/console/admin/feeds/remove": admin.removeFeed,
  "/console/admin/jobs/run": admin.runJob,
};
/** GET pages for the OpenAPI-free list of console routes (tests walk them). */
export const CONSOLE_PAGES = [...Object.keys(USER_GET), ...Object.keys(ADMIN_GET)];
export const CONSOLE_ADMIN_PAGES = Object.keys(ADMIN_GET);

export function consoleRoutes(services: Services) {
  const sessions = new ConsoleSessions(services);
  const outcomes = requestOutcomes(services);
  const asset = (text: string, type: string) => () => new Response(text, { headers: { "content-type": type, "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" } });
  const handle = (request: Request) => serveConsole(request, services, sessions, outcomes);
  return {
    "/": handle,
    "/login": handle,
    "/logout": handle,
    "/console": handle,
    "/console/*": handle,
    "/console/assets/console.css": asset(CONSOLE_CSS, "text/css; charset=utf-8"),
    "/console/assets/console.js": asset(CONSOLE_JS, "text/javascript; charset=utf-8"),
  };
}

const htmlResponse = (text: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(text, { status, headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8", ...headers } });
const redirect = (location: string, headers: Record<string, string> = {}) => new Response(null, { status: 303, headers: { ...SECURITY_HEADERS, location, ...headers } });

async function serveConsole(request: Request, services: Services, sessions: ConsoleSessions, outcomes: RequestOutcomes): Promise<Response> {
  const started = performance.now();
  const url = new URL(request.url);
  const path = url.pathname.replace(/\/$/, "") || "/";
  const session = sessions.of(request);
  const pageCtx: PageContext = { principal: session?.principal ?? null, csrf: session?.csrf ?? "" };
  let response: Response;
  try {
    response = await route(request, url, path, services, sessions, session, pageCtx);
  } catch (error) {
    const e = error instanceof AppError ? error : outcomes.failed(error);
    const status = toAppError("UNKNOWN", e).status;
    response = htmlResponse(page({ ...pageCtx, flash: { kind: "error", text: e.errorCode === "internal_error" ? "Something went wrong on the server; it was logged." : e.message } }, status === 404 ? "Not found" : "Could not do that", html`<p><a href="/console">Back to the console</a></p>`), status);
  }
  outcomes.answered(request, path.startsWith("/console/admin") ? "/console/admin/*" : path.startsWith("/console") ? "/console/*" : path, response.status, started);
  return response;
}

async function route(request: Request, url: URL, path: string, services: Services, sessions: ConsoleSessions, session: Session | null, pageCtx: PageContext): Promise<Response> {
  const method = request.method === "HEAD" ? "GET" : request.method;
  if (path === "/") return redirect(session ? "/console" : "/login");
  if (method === "POST" && !sameOrigin(request)) {
    return htmlResponse(page(pageCtx, "Refused", html`<p class="flash error" role="alert">A form from another site cannot change anything here.</p>`), 403);
  }
  if (method === "POST" && services.config.snapshot !== null && readOnlyRefusal(request) !== null) {
    throw new AppError("read_only", "This server answers read-only: nothing can be changed here");
  }
  if (path === "/login") {
    if (method === "GET") return htmlResponse(page(pageCtx, "Sign in", loginForm()));
    if (method !== "POST") throw new AppError("not_found", "No such page");
    const form = await readForm(request);
    try {
      const token = await services.credentials.login(form.get("email") ?? "", form.get("password") ?? "", "console");
      return redirect("/console", { "set-cookie": sessions.cookie(request, token.accessToken, token.expiresIn) });
    } catch (error) {
      const e = error instanceof AppError ? error : new AppError("unauthorized", "Invalid email or password");
      // A lockout's Retry-After too, as the API's login answers it (contract 15: the same lockout).
      return htmlResponse(page({ ...pageCtx, flash: { kind: "error", text: e.message } }, "Sign in", loginForm(form.get("email") ?? "")), e.status, e.headers);
    }
  }
  if (session === null) return redirect("/login");
  const form = method === "POST" ? await readForm(request) : null;
  if (form !== null && !sessions.csrfMatches(session, form.get("csrf") ?? null)) {
    return htmlResponse(page(pageCtx, "Refused", html`<p class="flash error" role="alert">This form has expired or did not come from this console; open the page again.</p>`), 403);
  }
  if (path === "/logout" && method === "POST") {
    sessions.end(session.token);
    return redirect("/login", { "set-cookie": sessions.cookie(request, null, 0) });
  }
  const isAdminPath = path.startsWith("/console/admin");
  if (isAdminPath && session.principal.role !== "admin") {
    return htmlResponse(page(pageCtx, "Administrators only", html`<p class="flash error" role="alert">This page is for administrators.</p>`), 403);
  }
  const handler = (method === "GET" ? (isAdminPath ? ADMIN_GET : USER_GET) : method === "POST" ? (isAdminPath ? ADMIN_POST : USER_POST) : {})[path];
  if (handler === undefined) throw new AppError("not_found", "No such page");
  const c: ConsoleRequest = { request, url, services, session, form, page: pageCtx };
  let result: PageResult;
  try {
    result = await handler(c);
  } catch (error) {
    if (!(error instanceof AppError) || method !== "POST") throw error;
    // A refused form: the page again, with why, and the status of the error.
    const fallback = (isAdminPath ? ADMIN_GET : USER_GET)[path.replace(/\/(change|remove|refresh|run|revoke)$/, "")];
    if (fallback === undefined) throw error;
    const details = error.details?.map((d) => `${d.field}: ${d.message}`).join("; ");
    result = { ...(await fallback(c)), flash: { kind: "error", text: details ? `${error.message} (${details})` : error.message }, status: error.status };
  }
  return htmlResponse(page({ ...pageCtx, flash: result.flash ?? null }, result.title, result.body), result.status ?? 200);
}

function loginForm(email = ""): Raw {
  return html`<form method="post" action="/login">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" value="${email}" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<p><button type="submit">Sign in</button></p></form>`;
}

const MAX_FORM_BYTES = 256 * 1024;

async function readForm(request: Request): Promise<Map<string, string>> {
  const type = (request.headers.get("content-type") ?? "").toLowerCase();
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) throw new AppError("unsupported_media_type", "Send the form as a browser does");
  // Read whole under the limit before the platform's parser sees it: a chunked body declares no length.
  const bytes = await readLimited(request, MAX_FORM_BYTES).catch((error) => {
    throw error instanceof AppError && error.errorCode === "payload_too_large" ? new AppError("payload_too_large", "The form is too large") : error;
  });
  let entries: [string, unknown][];
  try {
    entries = [...((await formOf(bytes, request.headers.get("content-type") as string)) as unknown as Iterable<[string, unknown]>)];
  } catch {
    throw new AppError("bad_request", "The form could not be read");
  }
  const out = new Map<string, string>();
  for (const [k, v] of entries) if (typeof v === "string") out.set(k, v);
  return out;
}
