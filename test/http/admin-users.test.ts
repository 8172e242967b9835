import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { addUser, TEST_PASSWORD, type TestUser } from "../support/accounts";

let h: Harness;
let admin: TestUser;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness();
  admin = await addUser(h, { email: "root@example.com", role: "admin", tier: "enterprise" });
  alice = await addUser(h, { email: "alice@example.com", tier: "free" });
});
afterAll(() => h.close());

async function asAdmin() {
  const { accessToken } = await h.services.credentials.issueToken(admin.user);
  return { authorization: `Bearer ${accessToken}` };
}
const createUser = async (json: unknown) => h.call("POST", "/v1/admin/users", { headers: await asAdmin(), json });
const patchUser = async (id: string | number, json: unknown) => h.call("PATCH", `/v1/admin/users/${id}`, { headers: await asAdmin(), json });
const whoami = (headers: Record<string, string>) => h.call("GET", "/v1/auth/whoami", { headers });

describe("GET /v1/admin/users", () => {
  test("lists every account, never a password hash", async () => {
    const res = await h.call("GET", "/v1/admin/users", { headers: await asAdmin() });
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    const listed = body.data.find((u: { email: string }) => u.email === "alice@example.com");
    expect(listed).toEqual({
      id: String(alice.user.id),
      email: "alice@example.com",
      tier: "free",
      role: "user",
      disabled: false,
      dailyLimit: null,
      dailyBudget: 1000,
      requestsToday: 0,
      createdAt: new Date(alice.user.createdAt).toISOString(),
      updatedAt: new Date(alice.user.updatedAt).toISOString(),
    });
    expect(JSON.stringify(body)).not.toContain("argon2");
    expect(JSON.stringify(body)).not.toMatch(/password/i);
  });
});

describe("POST /v1/admin/users", () => {
  test("creates an account (201, email lowercased) that can log in", async () => {
    const res = await createUser({ email: "New.User@Example.COM", password: "a long enough password", tier: "pro", dailyLimit: 50 });
    expect(res.status).toBe(201);
    const body = await bodyOf(res);
    expect(body.data).toMatchObject({ email: "new.user@example.com", tier: "pro", role: "user", disabled: false, dailyLimit: 50, dailyBudget: 50 });
    expect(JSON.stringify(body)).not.toMatch(/password|argon2/i);
    const login = await h.call("POST", "/v1/auth/login", { json: { email: "new.user@example.com", password: "a long enough password" } });
    expect(login.status).toBe(200);
    expect((await bodyOf(login)).data.user).toEqual({ id: body.data.id, email: "new.user@example.com", tier: "pro", role: "user" });
  });

  test("an admin can create another admin", async () => {
    const res = await createUser({ email: "second-admin@example.com", password: "another long password", tier: "enterprise", role: "admin" });
    expect(res.status).toBe(201);
    expect((await bodyOf(res)).data).toMatchObject({ role: "admin", dailyBudget: null });
  });

  test("an email already taken is 409", async () => {
    const res = await createUser({ email: "ALICE@example.com", password: "whatever password", tier: "free" });
    expect(res.status).toBe(409);
    expect(await bodyOf(res)).toEqual({ success: false, error: "A user with the email alice@example.com already exists", code: "conflict" });
  });

  test("every bad field is named in one 400", async () => {
    const res = await createUser({ email: "not an email", password: "short", tier: "gold", role: "root", dailyLimit: -1 });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({
      success: false,
      error: "The request is not valid",
      code: "validation_failed",
      details: [
        { field: "email", message: "is not a valid email address" },
        { field: "password", message: "must be at least 8 characters" },
        { field: "tier", message: "must be one of free, pro, enterprise" },
        { field: "role", message: "must be one of user, admin" },
        { field: "dailyLimit", message: "must be an integer from 0 to 1000000000000, or null for the tier's budget" },
      ],
    });
  });

  test.each([
    [{}, ["email", "password", "tier"]],
    [{ email: "x@example.com", password: "long enough", tier: "free", dailyLimit: 1.5 }, ["dailyLimit"]],
    [{ email: "x@example.com", password: 12345678, tier: "free" }, ["password"]],
    [[], ["(body)"]],
  ])("%j is 400 naming %j", async (json, fields) => {
    const res = await createUser(json);
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).details.map((d: { field: string }) => d.field)).toEqual(fields);
  });

  test("needs an admin", async () => {
    const res = await h.call("POST", "/v1/admin/users", { headers: alice.jwt, json: { email: "y@example.com", password: "long enough", tier: "free" } });
    expect(res.status).toBe(403);
  });
});

describe("PATCH /v1/admin/users/{id}", () => {
  test("a disable or a demotion made while the account's login checks its password holds (contract 3)", async () => {
    const mallory = await addUser(h, { email: "mallory@example.com" });
    const eve = await addUser(h, { email: "eve@example.com", role: "admin", tier: "enterprise" });
    // Each login is in its password check (argon2, on another thread) when the change commits.
    const malloryLogin = h.services.credentials.login("mallory@example.com", TEST_PASSWORD);
    h.services.accounts.update(mallory.user.id, { disabled: true });
    const eveLogin = h.services.credentials.login("eve@example.com", TEST_PASSWORD);
    h.services.accounts.update(eve.user.id, { role: "user" });
    await expect(malloryLogin).rejects.toThrow("Invalid email or password");
    expect((await whoami(mallory.jwt)).status).toBe(401);
    const { accessToken } = await eveLogin;
    for (const headers of [{ authorization: `Bearer ${accessToken}` }, eve.jwt]) {
      expect((await h.call("GET", "/v1/admin/users", { headers })).status).toBe(403);
    }
  });

  test("changes tier, role, disabled and dailyLimit", async () => {
    const bob = await addUser(h, { email: "bob@example.com" });
    const res = await patchUser(bob.user.id, { tier: "pro", dailyLimit: 7 });
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).data).toMatchObject({ id: String(bob.user.id), tier: "pro", dailyLimit: 7, dailyBudget: 7, role: "user", disabled: false });
    // The new budget is in force at once.
    const counted = await whoami(bob.apiKey);
    expect(counted.headers.get("x-ratelimit-limit")).toBe("7");
    expect((await bodyOf(await patchUser(bob.user.id, { dailyLimit: null }))).data).toMatchObject({ dailyLimit: null, dailyBudget: 100000 });
    expect((await whoami(bob.apiKey)).headers.get("x-ratelimit-limit")).toBe("100000");
    expect((await bodyOf(await patchUser(bob.user.id, { role: "admin" }))).data.role).toBe("admin");
    expect((await bodyOf(await patchUser(bob.user.id, { role: "user" }))).data.role).toBe("user");
  });

  test("disabling refuses the account's tokens and API keys at once with 401", async () => {
    const carol = await addUser(h, { email: "carol@example.com" });
    for (const headers of [carol.jwt, carol.apiKey, carol.bearerKey]) expect((await whoami(headers)).status).toBe(200);
    const res = await patchUser(carol.user.id, { disabled: true });
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).data.disabled).toBe(true);
    for (const headers of [carol.jwt, carol.apiKey, carol.bearerKey]) {
      const refused = await whoami(headers);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe("Bearer");
    }
    const login = await h.call("POST", "/v1/auth/login", { json: { email: "carol@example.com", password: TEST_PASSWORD } });
    expect(login.status).toBe(401);
    await patchUser(carol.user.id, { disabled: false });
    expect((await whoami(carol.apiKey)).status).toBe(200);
  });

  test("an unknown or malformed id is 404", async () => {
    for (const id of ["999999", "abc", "0"]) {
      const res = await patchUser(id, { tier: "pro" });
      expect(res.status).toBe(404);
      expect((await bodyOf(res)).code).toBe("not_found");
    }
  });

  test.each([
    [{}, "(body)"],
    [{ tier: "gold" }, "tier"],
    [{ role: "superuser" }, "role"],
    [{ disabled: "yes" }, "disabled"],
    [{ dailyLimit: "10" }, "dailyLimit"],
  ])("a bad body %j is 400 naming %s", async (json, field) => {
    const res = await patchUser(alice.user.id, json);
    expect(res.status).toBe(400);
    const body = await bodyOf(res);
    expect(body.code).toBe("validation_failed");
    expect(body.details.map((d: { field: string }) => d.field)).toEqual([field]);
  });

  test("the last enabled administrator cannot be demoted or disabled", async () => {
    const g = await createHarness();
    try {
      const only = await addUser(g, { email: "only-admin@example.com", role: "admin" });
      for (const json of [{ role: "user" }, { disabled: true }]) {
        const res = await g.call("PATCH", `/v1/admin/users/${only.user.id}`, { headers: only.jwt, json });
        expect(res.status).toBe(409);
        expect((await bodyOf(res)).error).toContain("last enabled administrator");
      }
      const other = await addUser(g, { email: "other@example.com", role: "admin" });
      const res = await g.call("PATCH", `/v1/admin/users/${only.user.id}`, { headers: other.jwt, json: { role: "user" } });
      expect(res.status).toBe(200);
    } finally {
      await g.close();
    }
  });
});
