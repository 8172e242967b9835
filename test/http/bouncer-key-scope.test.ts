// A bouncer's key (`abuse-intel bouncer add`) pulls decisions and nothing else: it sits in firewalls' configuration
// files, and one taken from there must not report addresses, look them up at an enterprise account's unlimited
// budget, or read blocklists (it used to be a full API key of the bouncers' enterprise account).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { BouncerRegistry } from "../../src/services/bouncers/registry";
import { BouncerTables } from "../../src/store/bouncers";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let user: TestUser;
let bouncerKey: string;

beforeAll(async () => {
  h = await createHarness();
  user = await addUser(h, { tier: "enterprise" });
  const registry = new BouncerRegistry({ store: h.store, tables: new BouncerTables(h.store), accounts: h.services.accounts, apiKeys: h.services.apiKeys, clock: h.clock });
  bouncerKey = (await registry.add({ name: "fw1" })).key;
  h.services.credentials.refresh();
});
afterAll(() => h.close());

test("it pulls the decisions stream and sends usage metrics", async () => {
  expect((await h.call("GET", "/v1/decisions/stream?startup=true", { headers: { "x-api-key": bouncerKey } })).status).toBe(200);
  expect((await h.call("POST", "/v1/usage-metrics", { headers: { "x-api-key": bouncerKey }, json: {} })).status).toBe(201);
});

test.each([
  ["GET", "/v1/ip/198.51.100.7/reputation"],
  ["GET", "/v1/ip/198.51.100.7"],
  ["GET", "/v1/ip/blocklist?format=txt"],
  ["GET", "/api/v2/check?ipAddress=198.51.100.7"],
])("%s %s with it is refused (401)", async (method, path) => {
  const headers: Record<string, string> = path.startsWith("/api/v2") ? { key: bouncerKey } : { "x-api-key": bouncerKey };
  expect((await h.call(method, path, { headers })).status).toBe(401);
});

test("it cannot report an address through /api/v2/report; nothing is stored", async () => {
  const res = await h.call("POST", "/api/v2/report", { headers: { key: bouncerKey }, body: new URLSearchParams({ ip: "198.51.100.8", categories: "18" }) });
  expect(res.status).toBe(401);
  expect(h.store.sqlite.query("SELECT count(*) AS n FROM reports").get()).toEqual({ n: 0 });
});

test("another API key still pulls decisions too (contract 14: any key works, with the default filter)", async () => {
  expect((await h.call("GET", "/v1/decisions/stream?startup=true", { headers: { "x-api-key": user.key } })).status).toBe(200);
});
