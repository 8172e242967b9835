// The console's session (contract section 15): the access token of a sign-in in a cookie (HttpOnly,
// SameSite=Strict, Secure over TLS or behind a proxy that says so), expiring with it; a console token, which the
// API refuses (and the console refuses API tokens). Sign-out ends it at once and for good: the token is refused
// until it would have expired, after a restart too. Cross-site requests: a state-changing form must come from
// this origin (Origin / Sec-Fetch-Site) and carry the session's token (an HMAC of the session), so a page
// elsewhere can neither post with the cookie nor forge the field.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Principal } from "../../domain/principal";
import type { Services } from "../../services/services";

export const SESSION_COOKIE = "abuse_intel_session";

export interface Session {
  token: string;
  principal: Principal;
  csrf: string;
}

export class ConsoleSessions {
  private readonly csrfKey = randomBytes(32);

  constructor(private readonly services: Services) {}

  /**
   * The session of a request's cookie, or null (none, expired, signed out, account disabled). Only a console
   * token is one (an API token in the cookie is not, nor is a console token accepted by the API).
   */
  of(request: Request): Session | null {
    const token = cookieOf(request, SESSION_COOKIE);
    if (token === null) return null;
    const principal = this.services.credentials.byConsoleJwt(token);
    if (principal === null) return null;
    return { token, principal, csrf: this.csrfOf(token) };
  }

  /** The form token of a session (the same for all its forms). */
  csrfOf(token: string): string {
    return createHmac("sha256", this.csrfKey).update(token).digest("base64url");
  }

  /** Whether a form's token belongs to the session. */
  csrfMatches(session: Session, given: string | null): boolean {
    if (given === null) return false;
    const a = Buffer.from(given);
    const b = Buffer.from(session.csrf);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** Ends a session at once, and for good: after a restart too (see Credentials.endConsoleSession). */
  end(token: string): void {
    this.services.credentials.endConsoleSession(token);
  }

  /** The Set-Cookie of a new session, or of its end (`token` null). */
  cookie(request: Request, token: string | null, maxAgeSeconds: number): string {
    const secure = isSecure(request) ? "; Secure" : "";
    if (token === null) return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure}`;
    return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.max(1, Math.floor(maxAgeSeconds))}${secure}`;
  }
}

/** Over TLS, or behind a proxy that says so (X-Forwarded-Proto: https). */
function isSecure(request: Request): boolean {
  return new URL(request.url).protocol === "https:" || (request.headers.get("x-forwarded-proto") ?? "").split(",")[0].trim() === "https";
}

/**
 * Whether a state-changing request comes from a page of this origin: the browser's Sec-Fetch-Site, else its
 * Origin (a request with neither, from a script or curl, has no cookie of a browser to abuse and still needs the
 * form token).
 */
export function sameOrigin(request: Request): boolean {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin" || site === "none";
  const origin = request.headers.get("origin");
  if (origin === null || origin === "null") return origin === null;
  const host = request.headers.get("host");
  try {
    return host !== null && new URL(origin).host === host;
  } catch {
    return false;
  }
}

function cookieOf(request: Request, name: string): string | null {
  const header = request.headers.get("cookie");
  if (header === null) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || null;
  }
  return null;
}
