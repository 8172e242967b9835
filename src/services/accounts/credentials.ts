// Turns a presented credential into a Principal (contract section 3) without touching the database, and
// synchronously: API keys by their SHA-256 in an in-memory map, JWTs by their HS256 signature (checked here with
// node:crypto, so authentication never waits) and then the account in an in-memory map. The maps are rebuilt
// whenever accounts or keys change, here or in another process (the change watcher). Also issues access tokens
// (signed with @elysiajs/jwt), and runs the login with its lockout.

import { jwt } from "@elysiajs/jwt";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { BOUNCER_ACCOUNT, type Principal } from "../../domain/principal";
import type { Accounts, User } from "./accounts";
import { API_KEY_PREFIX, API_KEY_RANDOM_LENGTH, LAST_USED_RESOLUTION_MS, type ApiKeys } from "./api-keys";
import type { LoginThrottle } from "./login-throttle";
import type { EndedSessions } from "./ended-sessions";
import { dailyBudgetOf } from "./rate-limiter";

export const JWT_SECRET_FILE = "jwt-secret";
export const JWT_SECRET_MIN_BYTES = 32;
const API_KEY_LENGTH = API_KEY_PREFIX.length + API_KEY_RANDOM_LENGTH;
/** API keys whose hash is remembered at most (see Credentials.keyHashes). */
const KEY_HASH_MEMO = 4096;
/** Verified tokens remembered so a client's repeated requests skip the HMAC; cleared whole when full. */
const TOKEN_CACHE_MAX = 10_000;

/** Three base64url parts joined by dots: the form of a JWT (anything else after Bearer is an API key). */
const JWT_FORM = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export function looksLikeJwt(value: string): boolean {
  return JWT_FORM.test(value);
}

export interface AccessToken {
  accessToken: string;
  tokenType: "Bearer";
  /** Seconds. */
  expiresIn: number;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

interface KeyEntry {
  keyId: number;
  principal: Principal;
  /** A bouncer's key (BOUNCER_ACCOUNT's): it pulls decisions only (byDecisionsKey). */
  decisionsOnly: boolean;
  /** When this key's use was last noted for lastUsedAt (ms), so a busy key is noted once a minute. */
  touchedAt: number;
}

/**
 * Who a token is for: the API (no `aud` claim) or the web console's session cookie (`aud: "console"`). Neither is
 * accepted for the other, so a console session's token cannot be used on the API (to mint a key, say).
 */
export type TokenAudience = "api" | "console";

interface VerifiedToken {
  userId: number;
  /** When it was issued, by this service's clock (the `iat_ms` claim; older tokens: their `iat`). */
  issuedAtMs: number;
  expiresAtMs: number;
  audience: TokenAudience;
  /** A console token's session (its jti), or null. */
  session: string | null;
}

export interface CredentialsDeps {
  accounts: Accounts;
  apiKeys: ApiKeys;
  loginThrottle: LoginThrottle;
  clock: Clock;
  /**
   * Brings in what another process (a CLI command) committed since the last look, calling refresh() if anything
   * changed; returns whether it did. Asked on a miss, so a key or account made there works on the next request
   * instead of after the change watcher's next tick. Cheap when nothing changed (one PRAGMA).
   */
  catchUp?: () => boolean;
  /** Console sessions ended by signing out; none end without it. */
  endedSessions?: EndedSessions;
}

export class Credentials {
  /** Enabled accounts by id, as the principal a JWT of theirs resolves to. */
  private principalsByUser = new Map<number, Principal>();
  /** Per account disabled at some time: tokens issued before this are refused (see users.tokens_valid_from). */
  private tokensValidFrom = new Map<number, number>();
  /**
   * Active keys of enabled accounts by SHA-256 in base64 (the store keeps hex; base64 is ~2× cheaper to make
   * from a presented key, and this is on every request).
   */
  private keysByHash = new Map<string, KeyEntry>();
  /**
   * The SHA-256 of API keys presented lately, by key: a lookup hashed every request's key again, a tenth of a
   * cached lookup's time. Only the hash is remembered, so a revoked key is refused as before (its hash is gone
   * from keysByHash); presented strings of the right length only, at most KEY_HASH_MEMO of them.
   */
  private readonly keyHashes = new Map<string, string>();
  private readonly tokens = new Map<string, VerifiedToken>();
  private readonly signer: ReturnType<typeof makeSigner>;
  private readonly jwtSecret: Uint8Array;

  constructor(
    private readonly deps: CredentialsDeps,
    jwtSecret: Uint8Array,
    private readonly ttlSeconds: number,
  ) {
    this.signer = makeSigner(jwtSecret);
    this.jwtSecret = jwtSecret;
    this.refresh();
  }

  /** Rebuilds the maps from the store: after any change to accounts or keys. */
  refresh(): void {
    const accounts = new Map<number, User>();
    const principals = new Map<number, Principal>();
    for (const user of this.deps.accounts.list()) {
      accounts.set(user.id, user);
      if (!user.disabled) principals.set(user.id, principalOf(user, "jwt", null));
    }
    const keys = new Map<string, KeyEntry>();
    for (const key of this.deps.apiKeys.listActive()) {
      const user = accounts.get(key.userId);
      if (!user || user.disabled) continue;
      const hash = Buffer.from(key.keyHash, "hex").toString("base64");
      const previous = this.keysByHash.get(hash);
      keys.set(hash, {
        keyId: key.id,
        principal: principalOf(user, "api_key", key.id),
        decisionsOnly: user.email === BOUNCER_ACCOUNT,
        touchedAt: Math.max(key.lastUsedAt ?? -Infinity, previous?.touchedAt ?? -Infinity),
      });
    }
    this.principalsByUser = principals;
    this.keysByHash = keys;
    this.tokensValidFrom = this.deps.accounts.tokensValidFrom();
  }

  /**
   * The principal of an API key, or null when it is unknown, revoked, its account disabled, or a bouncer's (which
   * only pulls decisions: byDecisionsKey).
   */
  byApiKey(key: string): Principal | null {
    const entry = this.keyEntry(key);
    return entry === null || entry.decisionsOnly ? null : this.used(entry);
  }

  /** The principal of an API key on the routes that serve decisions to bouncers: any key, a bouncer's too. */
  byDecisionsKey(key: string): Principal | null {
    const entry = this.keyEntry(key);
    return entry === null ? null : this.used(entry);
  }

  private keyEntry(key: string): KeyEntry | null {
    if (key.length !== API_KEY_LENGTH) return null;
    let hash = this.keyHashes.get(key);
    if (hash === undefined) {
      hash = Bun.SHA256.hash(key, "base64") as unknown as string;
      if (this.keyHashes.size >= KEY_HASH_MEMO) this.keyHashes.clear();
      this.keyHashes.set(key, hash);
    }
    let entry = this.keysByHash.get(hash);
    if (entry === undefined && this.deps.catchUp?.()) entry = this.keysByHash.get(hash);
    return entry ?? null;
  }

  /** The key's principal, its use noted (lastUsedAt, at most once a minute). */
  private used(entry: KeyEntry): Principal {
    const now = this.deps.clock.now();
    if (now - entry.touchedAt >= LAST_USED_RESOLUTION_MS) {
      entry.touchedAt = now;
      this.deps.apiKeys.noteUse(entry.keyId, now);
    }
    return entry.principal;
  }

  /** The principal of a user JWT, or null when it is tampered with, expired, or its account unknown or disabled. */
  byJwt(token: string): Principal | null {
    return this.byToken(token, "api");
  }

  /** The principal of a console session's token (see TokenAudience), under the same checks as byJwt. */
  byConsoleJwt(token: string): Principal | null {
    return this.byToken(token, "console");
  }

  protected byToken(token: string, audience: TokenAudience): Principal | null {
    const known = this.tokens.get(token) ?? this.verifyJwt(token);
    if (known === null || known.audience !== audience) return null;
    if (known.expiresAtMs <= this.deps.clock.now()) {
      this.tokens.delete(token);
      return null;
    }
    if (known.session !== null && this.deps.endedSessions?.has(known.session)) return null;
    const principal = this.principalOfUser(known.userId);
    // Issued before the account was last disabled: enabling it again does not bring the token back.
    if (principal !== null && known.issuedAtMs < (this.tokensValidFrom.get(known.userId) ?? -Infinity)) return null;
    return principal;
  }

  /** Ends the console session of `token` for good (signing out); a token that is no console session's is ignored. */
  endConsoleSession(token: string): void {
    if (this.byConsoleJwt(token) === null) return;
    const known = this.tokens.get(token);
    if (known?.session != null) this.deps.endedSessions?.end(known.session, known.expiresAtMs);
  }

  private principalOfUser(userId: number): Principal | null {
    const principal = this.principalsByUser.get(userId);
    if (principal !== undefined) return principal;
    return this.deps.catchUp?.() ? (this.principalsByUser.get(userId) ?? null) : null;
  }

  /** A bearer value: a JWT when it has the form of one, else an API key. */
  byBearer(value: string): Principal | null {
    return looksLikeJwt(value) ? this.byJwt(value) : this.byApiKey(value);
  }

  async issueToken(user: Pick<User, "id" | "role">, audience: TokenAudience = "api"): Promise<AccessToken> {
    const now = this.deps.clock.now();
    const expiresIn = Math.max(1, Math.floor(this.ttlSeconds));
    const exp = Math.floor(now / 1000) + expiresIn;
    // The issue time by this service's clock, in ms: the signer sets `iat` from the system clock, in seconds.
    const claims = { sub: String(user.id), role: user.role, exp, iat_ms: now };
    // A console token names its session (jti), so two sign-ins within a second are two sessions that end apart.
    const accessToken = await this.signer.sign(audience === "console" ? { ...claims, aud: "console", jti: randomBytes(12).toString("base64url") } : claims);
    return { accessToken, tokenType: "Bearer", expiresIn, expiresAt: exp * 1000 };
  }

  /**
   * Checks an email and password under the lockout and issues a token. Wrong email or wrong password: the
   * same 401, and so does a disabled account (whatever the password).
   */
  async login(givenEmail: string, password: string, audience: TokenAudience = "api"): Promise<AccessToken & { user: User }> {
    // As stored (lowercase), whoever calls: the API's login, the console's form.
    const email = givenEmail.trim().toLowerCase();
    this.deps.loginThrottle.begin(email);
    let user: User | null = null;
    try {
      user = await this.deps.accounts.checkPassword(email, password);
    } finally {
      // A disabled account's right password is a failure like any other: it must neither clear the lockout nor
      // answer differently, or the login would confirm guessed passwords of disabled accounts.
      this.deps.loginThrottle.finish(email, user !== null && !user.disabled);
    }
    if (user === null || user.disabled) throw new AppError("unauthorized", "Invalid email or password");
    // The password check took a while (argon2): the account is read again, or one disabled or demoted meanwhile
    // would be put back in the maps as it was before, its older tokens working again. From here to the maps'
    // update nothing else runs.
    user = this.deps.accounts.get(user.id);
    if (user === null || user.disabled) throw new AppError("unauthorized", "Invalid email or password");
    // The store is ahead of the maps when another process made or changed the account: the token signed now
    // must work on the next request.
    this.principalsByUser.set(user.id, principalOf(user, "jwt", null));
    return { ...(await this.issueToken(user, audience)), user };
  }

  /** The claims of a token this server signed, remembered (see `tokens`), or null. */
  private verifyJwt(token: string): VerifiedToken | null {
    const payload = verifyHs256(token, this.jwtSecret, Math.floor(this.deps.clock.now() / 1000));
    if (payload === null) return null;
    const { sub, exp, aud, jti, iat, iat_ms } = payload;
    // Tokens without an expiry are never accepted, even correctly signed ones.
    if (typeof sub !== "string" || !/^[1-9]\d{0,15}$/.test(sub) || typeof exp !== "number") return null;
    const audience: TokenAudience | null = aud === undefined ? "api" : aud === "console" ? "console" : null;
    if (audience === null) return null;
    const issuedAtMs = typeof iat_ms === "number" ? iat_ms : typeof iat === "number" ? iat * 1000 : Number.NEGATIVE_INFINITY;
    const session = audience === "console" && typeof jti === "string" ? jti : null;
    const verified: VerifiedToken = { userId: Number(sub), issuedAtMs, expiresAtMs: exp * 1000, audience, session };
    if (this.tokens.size >= TOKEN_CACHE_MAX) this.tokens.clear();
    this.tokens.set(token, verified);
    return verified;
  }
}

function makeSigner(secret: Uint8Array) {
  return jwt({ name: "jwt", secret, alg: "HS256" }).decorator.jwt;
}

/**
 * The claims of a compact JWS signed with HS256 under `secret`, or null. The checks are jose's `jwtVerify` with
 * `algorithms: ["HS256"]` (which issued tokens used to be verified with), made synchronous: the header a JSON
 * object with `alg` "HS256" and no `crit` (stricter than jose; we never issue one), the signature compared in
 * constant time, the claims a JSON object whose `iat`, `nbf`, `exp` are numbers when present, `nbf` not after
 * `nowSeconds` and `exp` after it.
 */
export function verifyHs256(token: string, secret: Uint8Array, nowSeconds: number): Record<string, unknown> | null {
  if (!JWT_FORM.test(token)) return null;
  const firstDot = token.indexOf(".");
  const secondDot = token.indexOf(".", firstDot + 1);
  const header = jsonObjectOf(token.slice(0, firstDot));
  if (header === null || header.alg !== "HS256" || header.crit !== undefined) return null;
  const expected = createHmac("sha256", secret).update(token.slice(0, secondDot)).digest();
  const signature = token.slice(secondDot + 1);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  // One spelling per signature: the last character's unused bits would give each token four (a signed-out
  // session's token, say, accepted again under another).
  if (given.toString("base64url") !== signature) return null;
  const claims = jsonObjectOf(token.slice(firstDot + 1, secondDot));
  if (claims === null) return null;
  const { iat, nbf, exp } = claims;
  if (iat !== undefined && typeof iat !== "number") return null;
  if (nbf !== undefined && (typeof nbf !== "number" || nbf > nowSeconds)) return null;
  if (exp !== undefined && (typeof exp !== "number" || exp <= nowSeconds)) return null;
  return claims;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A base64url part decoded as a JSON object, or null. */
function jsonObjectOf(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(strictUtf8.decode(Buffer.from(part, "base64url")));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function principalOf(user: User, via: Principal["via"], apiKeyId: number | null): Principal {
  return Object.freeze({
    userId: user.id,
    email: user.email,
    role: user.role,
    tier: user.tier,
    dailyBudget: dailyBudgetOf(user),
    via,
    apiKeyId,
  });
}

/**
 * The JWT signing secret: the configured one (at least 32 bytes), or else 32 random bytes kept as hex in
 * `<data-dir>/jwt-secret` (mode 0600), created on first start.
 */
export function loadJwtSecret(configured: string | null, dataDir: string): Uint8Array {
  if (configured !== null) {
    const bytes = new TextEncoder().encode(configured);
    if (bytes.length < JWT_SECRET_MIN_BYTES) {
      throw new AppError("bad_request", `ABUSE_INTEL_JWT_SECRET must be at least ${JWT_SECRET_MIN_BYTES} bytes long`);
    }
    return bytes;
  }
  const file = join(dataDir, JWT_SECRET_FILE);
  try {
    writeFileSync(file, randomBytes(JWT_SECRET_MIN_BYTES).toString("hex") + "\n", { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
  } catch (error) {
    // Already there (an earlier start, or another process a moment ago): use it.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const hex = readFileSync(file, "utf8").trim();
  if (!/^([0-9a-f]{2}){32,}$/i.test(hex)) {
    throw new AppError("bad_request", `${file} does not hold a hex secret of at least ${JWT_SECRET_MIN_BYTES} bytes; delete it to make a new one`);
  }
  return new Uint8Array(Buffer.from(hex, "hex"));
}
