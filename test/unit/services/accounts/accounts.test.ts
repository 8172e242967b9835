import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ensureInitialAdmin, normalizeEmail } from "../../../../src/services/accounts/accounts";
import { createHarness, type Harness } from "../../../support/harness";
import { addUser } from "../../../support/accounts";

describe("normalizeEmail", () => {
  test.each([
    ["alice@example.com", "alice@example.com"],
    ["  Alice@Example.COM ", "alice@example.com"],
    ["admin@localhost", "admin@localhost"],
    ["first.last+tag@sub.example.org", "first.last+tag@sub.example.org"],
    ["no-at-sign", null],
    ["two@@example.com", null],
    ["a@b@example.com", null],
    ["spa ce@example.com", null],
    ["@example.com", null],
    ["alice@", null],
    ["alice@exa_mple.com", null],
    ["alice@example..com", null],
    ["x".repeat(65) + "@example.com", null],
    ["a@" + "b".repeat(250) + ".com", null],
  ])("%p → %p", (raw, normalized) => {
    expect(normalizeEmail(raw)).toBe(normalized);
  });
});

describe("ensureInitialAdmin", () => {
  let h: Harness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  test("on an empty database: an admin with a random password and an API key, printed once and kept in a 0600 file", async () => {
    h = await createHarness();
    const printed: string[] = [];
    const made = await ensureInitialAdmin(h.services, { dataDir: h.dataDir, adminEmail: null, adminPassword: null }, (t) => printed.push(t));
    expect(made).not.toBeNull();
    expect(made!.user).toMatchObject({ email: "admin@localhost", role: "admin", tier: "enterprise", disabled: false });
    expect(made!.password).toMatch(/^[0-9A-Za-z]{24}$/);
    expect(made!.apiKey).toMatch(/^aik_[0-9A-Za-z]{40}$/);

    expect(printed).toHaveLength(1);
    expect(printed[0]).toContain(made!.password!);
    expect(printed[0]).toContain(made!.apiKey);
    const file = join(h.dataDir, "initial-credentials.txt");
    expect(made!.file).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, "utf8");
    expect(text).toContain("admin@localhost");
    expect(text).toContain(made!.password!);
    expect(text).toContain(made!.apiKey);

    // The credentials work: login, then an admin route; the key on a key route.
    const login = await h.call("POST", "/v1/auth/login", { json: { email: "admin@localhost", password: made!.password } });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { data: { accessToken: string } }).data.accessToken;
    expect((await h.call("GET", "/v1/admin/users", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await h.call("GET", "/v1/auth/whoami", { headers: { "x-api-key": made!.apiKey } })).status).toBe(200);

    // Once only.
    expect(await ensureInitialAdmin(h.services, { dataDir: h.dataDir, adminEmail: null, adminPassword: null }, (t) => printed.push(t))).toBeNull();
    expect(printed).toHaveLength(1);
    expect(h.services.accounts.count()).toBe(1);
  });

  test("ABUSE_INTEL_ADMIN_EMAIL and ABUSE_INTEL_ADMIN_PASSWORD set them; the given password is not echoed", async () => {
    h = await createHarness();
    const printed: string[] = [];
    const made = await ensureInitialAdmin(
      h.services,
      { dataDir: h.dataDir, adminEmail: "Ops@Example.com", adminPassword: "operator chosen password" },
      (t) => printed.push(t),
    );
    expect(made!.user.email).toBe("ops@example.com");
    expect(made!.password).toBeNull();
    expect(printed.join("\n")).not.toContain("operator chosen password");
    expect(readFileSync(made!.file, "utf8")).not.toContain("operator chosen password");
    const login = await h.call("POST", "/v1/auth/login", { json: { email: "ops@example.com", password: "operator chosen password" } });
    expect(login.status).toBe(200);
  });

  test("a configured password that is too short is refused before anything is created", async () => {
    h = await createHarness();
    await expect(ensureInitialAdmin(h.services, { dataDir: h.dataDir, adminEmail: null, adminPassword: "short" }, () => {})).rejects.toThrow(
      /ABUSE_INTEL_ADMIN_PASSWORD must be at least 8 characters/,
    );
    expect(h.services.accounts.count()).toBe(0);
  });

  test("does nothing when any user exists", async () => {
    h = await createHarness();
    await addUser(h, { email: "someone@example.com" });
    const printed: string[] = [];
    expect(await ensureInitialAdmin(h.services, { dataDir: h.dataDir, adminEmail: null, adminPassword: null }, (t) => printed.push(t))).toBeNull();
    expect(printed).toEqual([]);
  });
});
