// The built executable as a new user meets it: first start from an empty directory, the printed admin
// credentials, login, API keys by both headers, refused credentials, a CLI change reaching the running
// server, a small daily limit hit and kept across a restart. Contract sections 3, 4 and 11.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { createSandbox, parseFirstStartCredentials, runCli, type FirstStartCredentials, type Sandbox } from "./support/binary";
import { bodyOf, startServer, type RunningServer } from "./support/server";
import { decodeClaims, signHs256, unsigned, withClaims } from "./support/jwt";

const API_KEY = /^aik_[A-Za-z0-9]{40}$/;
// A label line with the admin's password; the first start prints one, later starts none.
const PASSWORD_LINE = /^[\s#*-]*(?:admin\s+)?password\s*[:=]/im;

let sandbox: Sandbox;
let server: RunningServer;
let printed: FirstStartCredentials | null;
let adminTokenCache: string | undefined;

/** The first admin's credentials as printed at first start (the first test checks them). */
function admin(): FirstStartCredentials {
  if (!printed) throw new Error(`the first start printed no admin credentials:\n${server.output()}`);
  return printed;
}

/** A user token of the first admin, by the printed password. */
async function adminToken(): Promise<string> {
  adminTokenCache ??= await login(admin().email, admin().password);
  return adminTokenCache;
}

const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });
const mode = (path: string) => statSync(path).mode & 0o777;

async function login(email: string, password: string): Promise<string> {
  const res = await server.request("POST", "/v1/auth/login", { json: { email, password } });
  const body = await bodyOf(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.data.accessToken;
}

/** A user made through the admin API, logged in. */
async function createUser(email: string, extra: Record<string, unknown> = {}): Promise<{ id: unknown; token: string }> {
  const password = `pw-${crypto.randomUUID()}`;
  const res = await server.request("POST", "/v1/admin/users", {
    headers: bearer(await adminToken()),
    json: { email, password, tier: "free", ...extra },
  });
  const body = await bodyOf(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return { id: body.data.id, token: await login(email, password) };
}

/** Seconds since the epoch at the next UTC midnight: when a daily budget resets. */
function nextUtcMidnight(): number {
  const now = new Date();
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) / 1000;
}

function expectUnauthorized(res: Response, body: { success: boolean; code: string }) {
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/);
  expect(body).toMatchObject({ success: false, code: "unauthorized" });
}

beforeAll(async () => {
  sandbox = createSandbox();
  server = await startServer(sandbox);
  // The credentials may be printed just after the listening line.
  await server.waitForOutput(PASSWORD_LINE, 3_000).catch(() => undefined);
  printed = parseFirstStartCredentials(server.output());
}, 30_000);

afterAll(async () => {
  await server?.stop();
  sandbox?.cleanup();
}, 30_000);

describe("first start from an empty directory", () => {
  test("prints the admin's email and password once and writes them to <data-dir>/initial-credentials.txt (0600)", () => {
    expect(printed, server.output()).not.toBeNull();
    expect(admin().email).toBe("admin@localhost");
    expect(admin().password.length).toBeGreaterThanOrEqual(12);

    const file = join(sandbox.dataDir, "initial-credentials.txt");
    expect(mode(file)).toBe(0o600);
    const saved = parseFirstStartCredentials(readFileSync(file, "utf8"));
    expect(saved).toEqual(admin());
  });

  test("creates its database and secret in the data directory and nothing else in the working directory", () => {
    expect(readdirSync(sandbox.dir)).toEqual(["data"]);
    expect(existsSync(join(sandbox.dataDir, "abuse-intel.db"))).toBe(true);
    expect(mode(join(sandbox.dataDir, "jwt-secret"))).toBe(0o600);
  });

  test("answers /healthz and /readyz, and unknown routes with the contract's 404 body", async () => {
    expect((await server.request("GET", "/healthz")).status).toBe(200);
    expect((await server.request("GET", "/readyz")).status).toBe(200);
    const res = await server.request("GET", "/v1/no-such-thing");
    expect(res.status).toBe(404);
    expect(await bodyOf(res)).toMatchObject({ success: false, code: "not_found" });
  });
});

describe("login and API keys", () => {
  test("the printed password logs in and gives a one-hour HS256 bearer token for the admin", async () => {
    const res = await server.request("POST", "/v1/auth/login", { json: { email: admin().email, password: admin().password } });
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body).toMatchObject({
      success: true,
      data: { tokenType: "Bearer", expiresIn: 3600, user: { email: "admin@localhost", role: "admin" } },
    });
    const token: string = body.data.accessToken;
    expect(token.split(".")).toHaveLength(3);
    const claims = decodeClaims(token);
    expect(claims).toMatchObject({ role: "admin" });
    expect(Number(claims.exp) - Number(claims.iat)).toBe(3600);
    expect(new Date(body.data.expiresAt).getTime()).toBe(Number(claims.exp) * 1000);
  });

  test("the API key printed at first start works", async () => {
    expect(admin().apiKey).toMatch(API_KEY);
    const res = await server.request("GET", "/v1/auth/whoami", { headers: { "x-api-key": admin().apiKey! } });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await bodyOf(res))).toContain("admin@localhost");
  });

  test("a key created with POST /v1/keys works by X-API-Key and by Authorization: Bearer, is listed without its secret, and is refused once revoked", async () => {
    const created = await server.request("POST", "/v1/keys", { headers: bearer(await adminToken()), json: { name: "e2e" } });
    expect(created.status).toBe(201);
    const { data: key } = await bodyOf(created);
    expect(key).toMatchObject({ name: "e2e" });
    expect(key.key).toMatch(API_KEY);
    expect(key.key.startsWith(key.prefix)).toBe(true);

    for (const headers of [{ "x-api-key": key.key }, bearer(key.key)]) {
      const res = await server.request("GET", "/v1/auth/whoami", { headers });
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect(JSON.stringify(await bodyOf(res))).toContain("admin@localhost");
    }

    const listed = await server.request("GET", "/v1/keys", { headers: bearer(await adminToken()) });
    expect(listed.status).toBe(200);
    const listText = await listed.text();
    expect(listText).not.toContain(key.key);
    const row = JSON.parse(listText).data.find((k: { id: unknown }) => k.id === key.id);
    expect(row).toMatchObject({ id: key.id, name: "e2e", prefix: key.prefix });
    expect(row.lastUsedAt).not.toBeNull();

    expect((await server.request("DELETE", `/v1/keys/${key.id}`, { headers: bearer(await adminToken()) })).status).toBeLessThan(300);
    const revoked = await server.request("GET", "/v1/auth/whoami", { headers: { "x-api-key": key.key } });
    expectUnauthorized(revoked, await bodyOf(revoked));
  });
});

describe("refused credentials", () => {
  test("a wrong password and an unknown email get the same 401", async () => {
    const wrongPassword = await server.request("POST", "/v1/auth/login", { json: { email: admin().email, password: "not-the-password" } });
    const unknownEmail = await server.request("POST", "/v1/auth/login", { json: { email: "nobody@example.com", password: admin().password } });
    expect(wrongPassword.status).toBe(401);
    expect(unknownEmail.status).toBe(401);
    const [a, b] = [await bodyOf(wrongPassword), await bodyOf(unknownEmail)];
    expect(a).toMatchObject({ success: false, code: "unauthorized" });
    expect(b).toEqual(a);
  });

  const otherSecret = "not-the-server-secret-not-the-server-secret";
  const claims = async () => decodeClaims(await adminToken());
  const cases: [string, string, () => Promise<Record<string, string>> | Record<string, string>][] = [
    ["no credential", "/v1/keys", () => ({})],
    ["an unknown API key by X-API-Key", "/v1/auth/whoami", () => ({ "x-api-key": `aik_${"x".repeat(40)}` })],
    ["an unknown API key by Bearer", "/v1/auth/whoami", () => bearer(`aik_${"Y".repeat(40)}`)],
    ["a bearer value that is no credential", "/v1/keys", () => bearer("hello")],
    ["a JWT whose claims were changed after signing", "/v1/keys", async () => bearer(withClaims(await adminToken(), { sub: "999999" }))],
    [
      "a JWT with its lifetime extended after signing",
      "/v1/keys",
      async () => bearer(withClaims(await adminToken(), { exp: Number((await claims()).exp) + 86_400 })),
    ],
    ["a JWT signed with another secret", "/v1/keys", async () => bearer(signHs256(await claims(), otherSecret))],
    ["an unsigned JWT (alg none)", "/v1/keys", async () => bearer(unsigned(await claims()))],
  ];
  test.each(cases)("%s gets 401 with WWW-Authenticate: Bearer", async (_name, path, headers) => {
    const res = await server.request("GET", path, { headers: await headers() });
    expectUnauthorized(res, await bodyOf(res));
  });

  test("an API key where a user token is required gets 401 pointing to POST /v1/auth/login", async () => {
    const res = await server.request("GET", "/v1/keys", { headers: { "x-api-key": admin().apiKey ?? "" } });
    const body = await bodyOf(res);
    expectUnauthorized(res, body);
    expect(body.error).toContain("/v1/auth/login");
  });
});

describe("command-line changes reach the running server", () => {
  // The server follows the CLI within 2 s on a quiet machine; a loaded one may take longer: the test waits (up to
  // 60 s) for the change to arrive and does not time it.
  async function within2s(attempt: () => Promise<Response>): Promise<{ status: number; ms: number }> {
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 60_000) {
      status = (await attempt()).status;
      if (status === 200) break;
      await Bun.sleep(100);
    }
    return { status, ms: Date.now() - started };
  }

  test("a key made by `abuse-intel key create` works against the server within 2 s", async () => {
    const cli = await runCli(sandbox, ["key", "create", "--email", "admin@localhost", "--name", "from-cli", "--data-dir", sandbox.dataDir]);
    expect(cli.code, cli.stdout + cli.stderr).toBe(0);
    // The key alone on stdout, so KEY=$(abuse-intel key create ...) works.
    const key = cli.stdout.trim();
    expect(key).toMatch(API_KEY);
    const result = await within2s(() => server.request("GET", "/v1/auth/whoami", { headers: { "x-api-key": key } }));
    expect(result.status).toBe(200);
  });

  test("a user made by `abuse-intel user add --password-stdin` can log in within 2 s", async () => {
    const cli = await runCli(sandbox, ["user", "add", "--email", "cli@example.com", "--tier", "pro", "--password-stdin", "--data-dir", sandbox.dataDir], {
      stdin: "cli-user-password-1\n",
    });
    expect(cli.code, cli.stdout + cli.stderr).toBe(0);
    const result = await within2s(() =>
      server.request("POST", "/v1/auth/login", { json: { email: "cli@example.com", password: "cli-user-password-1" } }),
    );
    expect(result.status).toBe(200);
  });
});

describe("daily limits", () => {
  test("the admin API creates a user with a custom dailyLimit and never returns its password hash", async () => {
    const res = await server.request("POST", "/v1/admin/users", {
      headers: bearer(await adminToken()),
      json: { email: "shape@example.com", password: "shape-password-1", tier: "free", dailyLimit: 7 },
    });
    const text = await res.text();
    expect(res.status, text).toBe(201);
    expect(JSON.parse(text).data).toMatchObject({ email: "shape@example.com", tier: "free", dailyLimit: 7 });
    expect(text).not.toMatch(/hash|argon2|shape-password-1/i);
  });

  test("50 requests at once with 20 left: exactly 20 succeed, the rest get 429", async () => {
    const { token } = await createUser("burst@example.com", { dailyLimit: 20 });
    const statuses = await Promise.all(
      Array.from({ length: 50 }, () => server.request("GET", "/v1/auth/whoami", { headers: bearer(token) }).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
  });

  test("a limit of 5: the count survives a graceful restart, then 429 with Retry-After and X-RateLimit-* headers", async () => {
    const { token } = await createUser("limited@example.com", { dailyLimit: 5 });
    const whoami = () => server.request("GET", "/v1/auth/whoami", { headers: bearer(token) });
    const reset = nextUtcMidnight();

    for (const remaining of [4, 3, 2]) {
      const res = await whoami();
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBe("5");
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(remaining));
      expect(res.headers.get("x-ratelimit-reset")).toBe(String(reset));
    }

    // SIGTERM is a graceful stop: pending counts are flushed before the process exits.
    expect(await server.stop("SIGTERM")).toBe(0);
    const credentialsBefore = readFileSync(join(sandbox.dataDir, "initial-credentials.txt"), "utf8");
    server = await startServer(sandbox);

    for (const remaining of [1, 0]) {
      const res = await whoami();
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(remaining));
    }
    const limited = await whoami();
    expect(limited.status).toBe(429);
    expect(await bodyOf(limited)).toMatchObject({ success: false, code: "rate_limited" });
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(Math.abs(retryAfter - (reset - Date.now() / 1000))).toBeLessThan(10);
    expect(limited.headers.get("x-ratelimit-limit")).toBe("5");
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(limited.headers.get("x-ratelimit-reset")).toBe(String(reset));

    // A later start neither prints nor rewrites the first admin's credentials.
    expect(server.output()).not.toMatch(PASSWORD_LINE);
    expect(readFileSync(join(sandbox.dataDir, "initial-credentials.txt"), "utf8")).toBe(credentialsBefore);
  });

  test("login does not count against the limit", async () => {
    const password = "counting-password-1";
    const created = await server.request("POST", "/v1/admin/users", {
      headers: bearer(await adminToken()),
      json: { email: "logins@example.com", password, tier: "free", dailyLimit: 2 },
    });
    expect(created.status).toBe(201);
    for (let i = 0; i < 3; i++) await login("logins@example.com", password);
    const token = await login("logins@example.com", password);
    const res = await server.request("GET", "/v1/auth/whoami", { headers: bearer(token) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ratelimit-remaining")).toBe("1");
  });
});

describe("the executable's own configuration", () => {
  // A second instance, started from a directory holding a stray .env and a bunfig.toml with a preload script.
  let other: Sandbox;
  let second: RunningServer;
  beforeAll(async () => {
    other = createSandbox();
    writeFileSync(join(other.dir, ".env"), "ABUSE_INTEL_ADMIN_EMAIL=dotenv@example.com\n");
    writeFileSync(join(other.dir, "preload.ts"), `require("fs").writeFileSync(${JSON.stringify(join(other.dir, "preloaded"))}, "x");\n`);
    writeFileSync(join(other.dir, "bunfig.toml"), 'preload = ["./preload.ts"]\n');
    second = await startServer(other, { env: { ABUSE_INTEL_ADMIN_PASSWORD: "password-from-the-environment" } });
  }, 30_000);
  afterAll(async () => {
    await second?.stop();
    other?.cleanup();
  }, 30_000);

  test("runs no preload script of a bunfig.toml in its working directory", () => {
    expect(existsSync(join(other.dir, "preloaded"))).toBe(false);
  });

  test("takes the admin's password from ABUSE_INTEL_ADMIN_PASSWORD but nothing from a .env file", async () => {
    const loginAs = (email: string) =>
      second.request("POST", "/v1/auth/login", { json: { email, password: "password-from-the-environment" } }).then((r) => r.status);
    expect(await loginAs("admin@localhost")).toBe(200);
    expect(await loginAs("dotenv@example.com")).toBe(401);
  });
});

describe("command line", () => {
  test("--version prints the package version", async () => {
    const result = await runCli(sandbox, ["--version"]);
    expect(result).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: "" });
  });

  for (const args of [["--help"], ["serve", "--help"], ["user", "--help"], ["key", "--help"]]) {
    test(`${args.join(" ")} exits 0 with usage`, async () => {
      const result = await runCli(sandbox, args);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/Usage: abuse-intel/);
    });
  }

  test("--help lists the commands", async () => {
    const { stdout } = await runCli(sandbox, ["--help"]);
    for (const command of ["serve", "user", "key"]) expect(stdout).toMatch(new RegExp(`^\\s+${command}\\b`, "m"));
  });

  test("an unknown command exits non-zero and says so on stderr", async () => {
    const result = await runCli(sandbox, ["frobnicate"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("frobnicate");
  });

  test("an unknown option exits non-zero", async () => {
    const result = await runCli(sandbox, ["serve", "--no-such-option"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("--no-such-option");
  });
});
