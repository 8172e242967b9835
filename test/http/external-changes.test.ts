// Changes made through a second connection to the same database file, as a CLI command on the same data
// directory makes them, reach the running services within 2 seconds (contract section 11). This is the one
// place tests wait on real time: the change watcher polls on a real timer.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../src/domain/clock";
import { Accounts } from "../../src/services/accounts/accounts";
import { ApiKeys } from "../../src/services/accounts/api-keys";
import { openStore, type Store } from "../../src/store/database";
import { createHarness, type Harness } from "../support/harness";
import { addUser } from "../support/accounts";
import { createFeedServices } from "../../src/app/feed-services";

let h: Harness;
let cli: Store;
beforeAll(async () => {
  h = await createHarness();
  cli = openStore(h.dataDir);
});
afterAll(async () => {
  cli.close();
  await h.close();
});

const whoami = (key: string) => h.call("GET", "/v1/auth/whoami", { headers: { "x-api-key": key } });

/** Polls until `check` holds, for at most 2 s; returns how long it took. */
async function within2s(check: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < 2_000) {
    if (await check()) return performance.now() - start;
    await Bun.sleep(50);
  }
  throw new Error("the change did not reach the server within 2 s");
}

describe("changes by another connection (the CLI) reach the server within 2 s", () => {
  test("a key created by the CLI works on the very next request", async () => {
    const user = await addUser(h, { email: "cli-key@example.com" });
    const { key } = new ApiKeys(cli, systemClock).create(user.user.id, "made by the cli");
    // Asked synchronously, before the watcher's timer can run: a miss looks for other processes' commits.
    expect(h.services.credentials.byApiKey(key)?.userId).toBe(user.user.id);
    expect((await whoami(key)).status).toBe(200);
  });

  test("a user added by the CLI logs in, and the token just issued works at once (issue 18)", async () => {
    const accounts = new Accounts(cli, systemClock);
    await accounts.create({ email: "cli-login@example.com", password: "cli password 456", tier: "free", role: "user", dailyLimit: null });
    const login = await h.call("POST", "/v1/auth/login", { json: { email: "cli-login@example.com", password: "cli password 456" } });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { data: { accessToken: string } }).data.accessToken;
    const created = await h.call("POST", "/v1/keys", { headers: { authorization: `Bearer ${token}` }, json: { name: "first key" } });
    expect(created.status).toBe(201);
  });

  test("a user and key created by the CLI work; revoking and disabling there take effect", async () => {
    const accounts = new Accounts(cli, systemClock);
    const apiKeys = new ApiKeys(cli, systemClock);
    const user = await accounts.create({ email: "cli-user@example.com", password: "cli password 123", tier: "free", role: "user", dailyLimit: null });
    const { key, record } = apiKeys.create(user.id, "cli");
    await within2s(async () => (await whoami(key)).status === 200);

    const second = apiKeys.create(user.id, "second").key;
    await within2s(async () => (await whoami(second)).status === 200);
    apiKeys.revoke(record.id);
    await within2s(async () => (await whoami(key)).status === 401);
    expect((await whoami(second)).status).toBe(200);

    accounts.update(user.id, { disabled: true });
    await within2s(async () => (await whoami(second)).status === 401);
  });

  test("a blocklist imported by the CLI is listed, and its removal there takes effect", async () => {
    const { key } = await addUser(h, { email: "feeds-reader@example.com", tier: "enterprise" });
    const detail = async (ip: string) => (await (await h.call("GET", `/v1/ip/${ip}`, { headers: { "x-api-key": key } })).json()) as { networks: unknown[]; reputationScore: number };
    // A reported address inside the network: the CLI's import rescores its row, the server follows the row too.
    const reporter = await addUser(h, { email: "feeds-reporter@example.com" });
    expect((await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ipAddress: "192.0.2.50", category: "SSH", description: "x", severity: 3 } })).status).toBe(201);
    // The CLI process on the same clock as the server, so both score the report at the same age.
    const cliFeeds = createFeedServices(cli, h.services.config, h.clock);
    cliFeeds.importText("cli-feed", "192.0.2.0/24\n", { category: "SPAM", severity: 4, replace: true });
    await within2s(async () => (await detail("192.0.2.9")).networks.length === 1);
    expect((await detail("192.0.2.9")).reputationScore).toBe(37);
    await within2s(async () => (await detail("192.0.2.50")).reputationScore === 25);
    cliFeeds.remove("cli-feed");
    await within2s(async () => (await detail("192.0.2.9")).networks.length === 0);
    await within2s(async () => (await detail("192.0.2.50")).reputationScore === 67);
  });

  test("the server's own writes do not look like external changes", async () => {
    const watcher = h.services.changes;
    watcher.poll();
    await addUser(h, { email: "own-write@example.com" });
    expect(watcher.poll()).toBe(false);
    new ApiKeys(cli, systemClock).create(1, "external");
    expect(watcher.poll()).toBe(true);
    expect(watcher.poll()).toBe(false);
  });
});
