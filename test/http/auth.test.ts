import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SignJWT } from "jose";
import { statSync } from "node:fs";
import { join } from "node:path";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { addUser, TEST_PASSWORD, type TestUser } from "../support/accounts";

let h: Harness;
let alice: TestUser;
let admin: TestUser;
const SECRET = "test-secret-test-secret-test-secret-0123";

beforeAll(async () => {
  h = await createHarness();
  alice = await addUser(h, { email: "alice@example.com", tier: "pro" });
  admin = await addUser(h, { email: "root@example.com", role: "admin", tier: "enterprise" });
});
afterAll(() => h.close());

const login = (email: string, password: string) => h.call("POST", "/v1/auth/login", { json: { email, password } });
const whoami = (headers: Record<string, string>) => h.call("GET", "/v1/auth/whoami", { headers });

/** A token issued now: tests move the shared clock, which expires the ones made in beforeAll. */
async function freshJwt(user: TestUser): Promise<Record<string, string>> {
  const { accessToken } = await h.services.credentials.issueToken(user.user);
  return { authorization: `Bearer ${accessToken}` };
}

function decodePart(token: string, index: number) {
  return JSON.parse(Buffer.from(token.split(".")[index], "base64url").toString("utf8"));
}

async function expectUnauthorized(res: Response, error?: string | RegExp) {
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe("Bearer");
  const body = await bodyOf(res);
  expect(body.success).toBe(false);
  expect(body.code).toBe("unauthorized");
  if (typeof error === "string") expect(body.error).toBe(error);
  else if (error) expect(body.error).toMatch(error);
  return body;
}

describe("POST /v1/auth/login", () => {
  test("a right email and password give a user access token in the contract's shape", async () => {
    const res = await login("alice@example.com", TEST_PASSWORD);
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body).toEqual({
      success: true,
      data: {
        accessToken: expect.any(String),
        tokenType: "Bearer",
        expiresIn: 3600,
        expiresAt: new Date(h.clock.now() + 3600_000).toISOString(),
        user: { id: String(alice.user.id), email: "alice@example.com", tier: "pro", role: "user" },
      },
    });
    const token = body.data.accessToken as string;
    expect(decodePart(token, 0)).toMatchObject({ alg: "HS256" });
    const claims = decodePart(token, 1);
    expect(claims).toMatchObject({ sub: String(alice.user.id), role: "user", exp: Math.floor(h.clock.now() / 1000) + 3600 });
    expect(typeof claims.iat).toBe("number");
    const keys = await h.call("GET", "/v1/keys", { headers: { authorization: `Bearer ${token}` } });
    expect(keys.status).toBe(200);
  });

  test("the email is matched without regard to case or surrounding spaces", async () => {
    expect((await login("  ALICE@Example.com ", TEST_PASSWORD)).status).toBe(200);
  });

  test("a wrong password and an unknown email give the same 401", async () => {
    const wrongPassword = await expectUnauthorized(await login("alice@example.com", "not the password"));
    const unknownEmail = await expectUnauthorized(await login("nobody@example.com", TEST_PASSWORD));
    expect(wrongPassword).toEqual(unknownEmail);
    expect(wrongPassword).toEqual({ success: false, error: "Invalid email or password", code: "unauthorized" });
  });

  test.each([
    [{}, ["email", "password"]],
    [{ email: "alice@example.com" }, ["password"]],
    [{ email: 5, password: TEST_PASSWORD }, ["email"]],
    [{ email: "alice@example.com", password: "" }, ["password"]],
  ])("a body missing fields is 400 naming them: %j", async (json, fields) => {
    const res = await h.call("POST", "/v1/auth/login", { json });
    expect(res.status).toBe(400);
    const body = await bodyOf(res);
    expect(body.code).toBe("validation_failed");
    expect(body.details.map((d: { field: string }) => d.field)).toEqual(fields);
  });

  test("a disabled user cannot log in, and the answer does not tell a right password from a wrong one", async () => {
    const bob = await addUser(h, { email: "bob-disabled@example.com" });
    h.services.accounts.update(bob.user.id, { disabled: true });
    const right = await login("bob-disabled@example.com", TEST_PASSWORD);
    const wrong = await login("bob-disabled@example.com", "not the password");
    await expectUnauthorized(right, /Invalid email or password/);
    await expectUnauthorized(wrong, /Invalid email or password/);
    // The right password of a disabled account counts as a failure toward the lockout: 2 so far.
    expect(h.services.loginThrottle.secondsLocked("bob-disabled@example.com")).toBe(0);
    for (let i = 0; i < 8; i++) await login("bob-disabled@example.com", TEST_PASSWORD);
    expect((await login("bob-disabled@example.com", TEST_PASSWORD)).status).toBe(429);
  });

  test("logging in does not count against the daily budget", async () => {
    const carol = await addUser(h, { email: "carol@example.com", dailyLimit: 1 });
    for (let i = 0; i < 3; i++) {
      const res = await login("carol@example.com", TEST_PASSWORD);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBeNull();
    }
    expect((await whoami(carol.apiKey)).status).toBe(200);
    expect((await whoami(carol.apiKey)).status).toBe(429);
  });
});

describe("the login lockout: 10 failures per email in 15 minutes", () => {
  test("the 11th attempt is 429 with Retry-After, even with the right password, until the window passes", async () => {
    await addUser(h, { email: "dave@example.com" });
    for (let i = 0; i < 10; i++) {
      expect((await login("dave@example.com", `wrong ${i}`)).status).toBe(401);
      h.clock.advance(1_000);
    }
    // The first failure was 10 s ago: the lock lifts 15 minutes after it.
    const locked = await login("dave@example.com", TEST_PASSWORD);
    expect(locked.status).toBe(429);
    expect(locked.headers.get("retry-after")).toBe(String(15 * 60 - 10));
    expect((await bodyOf(locked)).code).toBe("rate_limited");

    // Other emails are not affected.
    expect((await login("alice@example.com", TEST_PASSWORD)).status).toBe(200);

    h.clock.advance((15 * 60 - 10) * 1000 - 1);
    const stillLocked = await login("dave@example.com", TEST_PASSWORD);
    expect(stillLocked.status).toBe(429);
    expect(stillLocked.headers.get("retry-after")).toBe("1");

    h.clock.advance(1);
    expect((await login("dave@example.com", TEST_PASSWORD)).status).toBe(200);
  });

  test("guesses sent all at once cannot slip past the limit", async () => {
    await addUser(h, { email: "erin@example.com" });
    const results = await Promise.all(Array.from({ length: 14 }, (_, i) => login("erin@example.com", `guess ${i}`)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
  });

  test("a successful login forgets the failures", async () => {
    await addUser(h, { email: "frank@example.com" });
    for (let i = 0; i < 9; i++) expect((await login("frank@example.com", "wrong")).status).toBe(401);
    expect((await login("frank@example.com", TEST_PASSWORD)).status).toBe(200);
    for (let i = 0; i < 9; i++) expect((await login("frank@example.com", "wrong")).status).toBe(401);
    expect((await login("frank@example.com", TEST_PASSWORD)).status).toBe(200);
  });
});

describe("credentials (contract section 3)", () => {
  test("no credential: 401 with WWW-Authenticate: Bearer", async () => {
    await expectUnauthorized(await whoami({}), /X-API-Key/);
    await expectUnauthorized(await whoami({ authorization: "Bearer " }));
    await expectUnauthorized(await whoami({ authorization: "Basic YWxpY2U6c2VjcmV0" }));
  });

  test("an API key works in X-API-Key and as a bearer value", async () => {
    for (const headers of [alice.apiKey, alice.bearerKey, { authorization: `bearer ${alice.key}` }]) {
      const res = await whoami(headers);
      expect(res.status).toBe(200);
      expect(await bodyOf(res)).toEqual({
        success: true,
        data: { id: String(alice.user.id), email: "alice@example.com", role: "user", tier: "pro", via: "api_key" },
      });
    }
  });

  test("a user JWT works on a key route too", async () => {
    const res = await whoami(await freshJwt(alice));
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).data.via).toBe("jwt");
  });

  test.each([
    ["an unknown key", { "x-api-key": "aik_" + "A".repeat(40) }],
    ["a key of the wrong length", { "x-api-key": "aik_short" }],
    ["an unknown bearer key", { authorization: "Bearer aik_" + "B".repeat(40) }],
    ["garbage shaped like a JWT", { authorization: "Bearer aaa.bbb.ccc" }],
  ])("%s is 401", async (_, headers) => {
    await expectUnauthorized(await whoami(headers), "The credential is invalid, expired or revoked");
  });

  test("a tampered JWT is 401: changed payload, changed signature", async () => {
    const token = (await freshJwt(alice)).authorization.slice("Bearer ".length);
    expect((await whoami({ authorization: `Bearer ${token}` })).status).toBe(200);
    const [header, payload, signature] = token.split(".");
    const claims = { ...decodePart(token, 1), role: "admin", sub: String(admin.user.id) };
    const forgedPayload = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${signature}`;
    await expectUnauthorized(await whoami({ authorization: `Bearer ${forgedPayload}` }));
    const flipped = signature[0] === "A" ? "B" + signature.slice(1) : "A" + signature.slice(1);
    await expectUnauthorized(await whoami({ authorization: `Bearer ${header}.${payload}.${flipped}` }));
  });

  test("a JWT signed with another secret, with alg none, or without exp is 401", async () => {
    const exp = Math.floor(h.clock.now() / 1000) + 600;
    const sub = String(alice.user.id);
    const otherSecret = await new SignJWT({ sub, role: "user", exp })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode("another-secret-another-secret-another-secret"));
    await expectUnauthorized(await whoami({ authorization: `Bearer ${otherSecret}` }));

    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${Buffer.from(JSON.stringify({ sub, exp })).toString("base64url")}.x`;
    await expectUnauthorized(await whoami({ authorization: `Bearer ${none}` }));

    const noExp = await new SignJWT({ sub, role: "user" }).setProtectedHeader({ alg: "HS256" }).sign(new TextEncoder().encode(SECRET));
    await expectUnauthorized(await whoami({ authorization: `Bearer ${noExp}` }));

    // The same construction with exp is accepted: the refusals above are for the reasons named.
    const good = await new SignJWT({ sub, role: "user", exp }).setProtectedHeader({ alg: "HS256" }).sign(new TextEncoder().encode(SECRET));
    expect((await whoami({ authorization: `Bearer ${good}` })).status).toBe(200);
  });

  test("a JWT expires after its lifetime, also once it has been seen", async () => {
    const gina = await addUser(h, { email: "gina@example.com" });
    expect((await whoami(gina.jwt)).status).toBe(200);
    h.clock.advance(3600_000 - 1);
    expect((await whoami(gina.jwt)).status).toBe(200);
    h.clock.advance(1);
    await expectUnauthorized(await whoami(gina.jwt));
    // And a fresh token of the same account works.
    const { accessToken } = await h.services.credentials.issueToken(gina.user);
    expect((await whoami({ authorization: `Bearer ${accessToken}` })).status).toBe(200);
  });

  test("an API key on a route that needs a user JWT is 401 naming POST /v1/auth/login", async () => {
    for (const headers of [alice.apiKey, alice.bearerKey]) {
      const body = await expectUnauthorized(await h.call("GET", "/v1/keys", { headers }));
      expect(body.error).toContain("POST /v1/auth/login");
      expect(body.error).toContain("attributed to an account");
    }
  });

  test("a non-admin on an admin route is 403; an admin API key is 401", async () => {
    const res = await h.call("GET", "/v1/admin/users", { headers: await freshJwt(alice) });
    expect(res.status).toBe(403);
    expect(await bodyOf(res)).toEqual({ success: false, error: "This endpoint needs an administrator account", code: "forbidden" });
    await expectUnauthorized(await h.call("GET", "/v1/admin/users", { headers: admin.apiKey }), /POST \/v1\/auth\/login/);
    expect((await h.call("GET", "/v1/admin/users", { headers: await freshJwt(admin) })).status).toBe(200);
  });

  test("a demoted admin's token loses admin rights at once (the role is read from the account, not the token)", async () => {
    const former = await addUser(h, { email: "former-admin@example.com", role: "admin" });
    expect((await h.call("GET", "/v1/admin/users", { headers: former.jwt })).status).toBe(200);
    h.services.accounts.update(former.user.id, { role: "user" });
    expect((await h.call("GET", "/v1/admin/users", { headers: former.jwt })).status).toBe(403);
  });

  test("a disabled account's token and keys are refused at once; once enabled its keys work again, its old token does not", async () => {
    const hank = await addUser(h, { email: "hank@example.com" });
    expect((await whoami(hank.jwt)).status).toBe(200);
    h.services.accounts.update(hank.user.id, { disabled: true });
    for (const headers of [hank.jwt, hank.apiKey, hank.bearerKey]) await expectUnauthorized(await whoami(headers));
    h.clock.advance(5_000);
    h.services.accounts.update(hank.user.id, { disabled: false });
    for (const headers of [hank.apiKey, hank.bearerKey]) expect((await whoami(headers)).status).toBe(200);
    // A token issued before the account was disabled stays refused (it may be why it was disabled); a new one works.
    await expectUnauthorized(await whoami(hank.jwt));
    const { accessToken } = await h.services.credentials.issueToken(hank.user);
    expect((await whoami({ authorization: `Bearer ${accessToken}` })).status).toBe(200);
  });
});

describe("the JWT secret", () => {
  test("without ABUSE_INTEL_JWT_SECRET, 32 random bytes are kept in <data-dir>/jwt-secret (0600) and survive a restart", async () => {
    let g = await createHarness({ jwtSecret: null });
    try {
      const file = join(g.dataDir, "jwt-secret");
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const user = await addUser(g, { email: "ivy@example.com" });
      g = await g.reopen();
      expect((await g.call("GET", "/v1/auth/whoami", { headers: user.jwt })).status).toBe(200);
      // A token signed with the harness's fixed test secret is not accepted by this instance.
      const foreign = await new SignJWT({ sub: String(user.user.id), role: "user", exp: Math.floor(g.clock.now() / 1000) + 60 })
        .setProtectedHeader({ alg: "HS256" })
        .sign(new TextEncoder().encode(SECRET));
      expect((await g.call("GET", "/v1/auth/whoami", { headers: { authorization: `Bearer ${foreign}` } })).status).toBe(401);
    } finally {
      await g.close();
    }
  });
});
