// `abuse-intel user` and `abuse-intel key` as an operator runs them: the real entry point in a child process
// on a temporary data directory, checked through the same store the server would open.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../../src/domain/clock";
import { Accounts } from "../../../src/services/accounts/accounts";
import { ApiKeys, hashApiKey } from "../../../src/services/accounts/api-keys";
import { openStore } from "../../../src/store/database";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
let dataDir: string;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-cli-"));
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function cli(args: string[], options: { stdin?: string; env?: Record<string, string> } = {}) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], {
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ABUSE_INTEL_DATA_DIR: dataDir, ...options.env },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

function withStore<T>(work: (accounts: Accounts, apiKeys: ApiKeys) => T): T {
  const store = openStore(dataDir);
  try {
    return work(new Accounts(store, systemClock), new ApiKeys(store, systemClock));
  } finally {
    store.close();
  }
}

describe("abuse-intel user", () => {
  test("add without --password-stdin prints a generated password alone on stdout, and it logs in", async () => {
    const { stdout, stderr, code } = await cli(["user", "add", "--email", "Alice@Example.com", "--tier", "pro"]);
    expect(code).toBe(0);
    expect(stderr).toContain("alice@example.com");
    const password = stdout.trim();
    expect(password).toMatch(/^[0-9A-Za-z]{24}$/);
    const user = await withStore((accounts) => accounts.checkPassword("alice@example.com", password));
    expect(user).toMatchObject({ email: "alice@example.com", tier: "pro", role: "user" });
  });

  test("add --password-stdin takes the password from stdin (without its newline); --role and --daily-limit", async () => {
    const { code, stdout } = await cli(
      ["user", "add", "--email", "root@example.com", "--tier", "enterprise", "--role", "admin", "--daily-limit", "500", "--password-stdin"],
      { stdin: "piped in password\n" },
    );
    expect(code).toBe(0);
    expect(stdout).toBe("");
    const user = await withStore((accounts) => accounts.checkPassword("root@example.com", "piped in password"));
    expect(user).toMatchObject({ role: "admin", tier: "enterprise", dailyLimit: 500 });
  });

  test("bad input exits 2 with the reasons; a taken email too", async () => {
    const bad = await cli(["user", "add", "--email", "nope", "--tier", "gold"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("email: is not a valid email address");
    expect(bad.stderr).toContain("tier: must be one of free, pro, enterprise");
    const taken = await cli(["user", "add", "--email", "alice@example.com", "--tier", "free"]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain("already exists");
  });

  test("set changes tier, disabled and the daily limit; list shows them", async () => {
    expect((await cli(["user", "set", "--email", "alice@example.com", "--tier", "free", "--disabled", "true", "--daily-limit", "10"])).code).toBe(0);
    expect(withStore((accounts) => accounts.findByEmail("alice@example.com"))).toMatchObject({ tier: "free", disabled: true, dailyLimit: 10 });
    const listed = await cli(["user", "list", "--json"]);
    expect(JSON.parse(listed.stdout).find((u: { email: string }) => u.email === "alice@example.com")).toMatchObject({
      tier: "free",
      disabled: true,
      dailyLimit: 10,
      dailyBudget: 10,
    });
    expect((await cli(["user", "set", "--email", "alice@example.com", "--disabled", "false", "--daily-limit", "none"])).code).toBe(0);
    expect(withStore((accounts) => accounts.findByEmail("alice@example.com"))).toMatchObject({ disabled: false, dailyLimit: null });
    const table = await cli(["user", "list"]);
    expect(table.stdout).toMatch(/^ID\s+EMAIL\s+TIER/);
    expect(table.stdout).toContain("alice@example.com");
    const unknown = await cli(["user", "set", "--email", "ghost@example.com", "--tier", "pro"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("no user with the email");
  });

  test("--help describes the subcommands and the data directory", async () => {
    const { stdout, code } = await cli(["user", "--help"]);
    expect(code).toBe(0);
    for (const text of ["user add", "user list", "user set", "--password-stdin", "--data-dir", "ABUSE_INTEL_DATA_DIR"]) expect(stdout).toContain(text);
  });
});

describe("abuse-intel key", () => {
  test("create prints the key once on stdout; only its hash is stored; list and revoke", async () => {
    const created = await cli(["key", "create", "--email", "alice@example.com", "--name", "edge firewall"]);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^aik_[0-9A-Za-z]{40}$/);
    const stored = withStore((accounts, apiKeys) => apiKeys.listActive().find((k) => k.keyHash === hashApiKey(key)));
    expect(stored).toBeDefined();

    const listed = JSON.parse((await cli(["key", "list", "--email", "alice@example.com", "--json"])).stdout);
    expect(listed).toEqual([{ id: String(stored!.id), name: "edge firewall", prefix: key.slice(0, 12), createdAt: expect.any(String), lastUsedAt: null }]);
    expect(JSON.stringify(listed)).not.toContain(key);

    const revoked = await cli(["key", "revoke", String(stored!.id)]);
    expect(revoked.code).toBe(0);
    expect(withStore((accounts, apiKeys) => apiKeys.listActive().some((k) => k.id === stored!.id))).toBe(false);
    const again = await cli(["key", "revoke", String(stored!.id)]);
    expect(again.code).toBe(2);
    const table = await cli(["key", "list", "--email", "alice@example.com"]);
    expect(table.stdout).toContain("revoked");
  });

  test("--data-dir beats ABUSE_INTEL_DATA_DIR", async () => {
    const other = mkdtempSync(join(tmpdir(), "abuse-intel-cli-other-"));
    try {
      const res = await cli(["user", "add", "--email", "elsewhere@example.com", "--tier", "free", "--data-dir", other]);
      expect(res.code).toBe(0);
      expect(withStore((accounts) => accounts.findByEmail("elsewhere@example.com"))).toBeNull();
      const store = openStore(other);
      try {
        expect(new Accounts(store, systemClock).findByEmail("elsewhere@example.com")).not.toBeNull();
      } finally {
        store.close();
      }
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test("mistakes exit 2 with a message", async () => {
    for (const args of [["key"], ["key", "frobnicate"], ["key", "revoke"], ["key", "revoke", "abc"], ["key", "create", "--email", "alice@example.com"]]) {
      const res = await cli(args);
      expect(res.code).toBe(2);
      expect(res.stderr.length).toBeGreaterThan(0);
    }
  });
});
