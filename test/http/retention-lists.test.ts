// Contract 5.5, "a report past retention stops counting at once, whether or not the job has run yet", on the
// lists: the blocklist a firewall polls with If-None-Match drops an expired report's address at the first poll
// after it expired (lists used to catch up within 10 s), for addresses in both families, and the index's map from
// slot to address stays right as addresses come and go.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let reporter: TestUser;
let poller: TestUser;

beforeAll(async () => {
  // A short retention, as an operator may configure it (--retention-days 1).
  h = await createHarness({ retentionDays: 1 });
  reporter = await addUser(h, { tier: "enterprise" });
  poller = await addUser(h, { tier: "free" });
});
afterAll(() => h.close());

const DAY = 86_400_000;

test("an address whose only report passed retention leaves the blocklist at the first poll after", async () => {
  const t0 = h.clock.now();
  const report = async (ip: string) =>
    expect((await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ipAddress: ip, category: "SSH", description: "r", severity: 5 } })).status).toBe(201);
  await report("198.51.100.1");
  h.clock.set(t0 + 5_000);
  await report("198.51.100.2");
  const list = (headers: Record<string, string> = {}) => h.call("GET", "/v1/ip/blocklist?format=txt&riskLevel=LOW", { headers: { ...poller.apiKey, ...headers } });
  expect(await (await list()).text()).toBe("198.51.100.1\n198.51.100.2\n");

  // The first report passes retention: the list drops it (a walk of the index runs).
  h.clock.set(t0 + DAY + 1);
  const first = await list();
  expect(await first.text()).toBe("198.51.100.2\n");
  const etag = first.headers.get("etag")!;

  // Six seconds later the second one has passed retention too (by 1 s).
  h.clock.set(t0 + 5_000 + DAY + 1_000);
  const polled = await list({ "if-none-match": etag });
  expect(polled.status).toBe(200);
  expect(await (await list()).text()).toBe("");
});

test("addresses of both families, and one that takes a freed slot, each leave the list at the first poll after they expire", async () => {
  const t0 = h.clock.now() + 10 * DAY;
  h.clock.set(t0);
  // Reports take a user token, valid for an hour of the clock: a fresh one for each.
  const report = async (ip: string) => {
    const { accessToken } = await h.services.credentials.issueToken(reporter.user);
    const headers = { authorization: `Bearer ${accessToken}` };
    expect((await h.call("POST", "/v1/ip/report", { headers, json: { ipAddress: ip, category: "SSH", description: "r", severity: 5 } })).status).toBe(201);
  };
  const listed = async () => (await (await h.call("GET", "/v1/ip/blocklist?format=txt&riskLevel=LOW", { headers: poller.apiKey })).text()).split("\n").filter(Boolean).sort();

  await report("2001:db8::a");
  h.clock.set(t0 + 1_000);
  await report("198.51.100.20");
  expect(await listed()).toEqual(["198.51.100.20", "2001:db8::a"]);

  // The IPv6 address expires first (the index maps its slots to addresses now) and its slot is freed.
  h.clock.set(t0 + DAY + 1);
  expect(await listed()).toEqual(["198.51.100.20"]);
  // A new address takes a slot, possibly the freed one: the map must follow it.
  h.clock.set(t0 + DAY + 2);
  await report("2001:db8::c");
  h.clock.set(t0 + DAY + 1_001);
  expect(await listed()).toEqual(["2001:db8::c"]);
  h.clock.set(t0 + 2 * DAY + 3);
  expect(await listed()).toEqual([]);
});
