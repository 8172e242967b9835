// Review (intake): DELETE /api/v2/clear-address by the reporter, then the same report again. Clearing one's own
// report within the 15 minutes reopens the address at once (the 15-minute rule reads the reports table), and the
// cleared report's credit stays: a loop of report + clear earns a credit (one per category) and an `ip.reported`
// webhook event every round, with no report left to show for it.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let reporter: TestUser;
beforeAll(async () => {
  h = await createHarness();
  reporter = await addUser(h, { tier: "enterprise" });
  h.clock.set("2026-11-21T08:00:00.000Z");
});
afterAll(() => h.close());

const IP = "203.0.113.200";
const report = () =>
  fetch(`${h.url}/api/v2/report`, { method: "POST", headers: { Key: reporter.key }, body: new URLSearchParams({ ip: IP, categories: "18,22", comment: "ssh" }) });
const clear = () => fetch(`${h.url}/api/v2/clear-address?ipAddress=${IP}`, { method: "DELETE", headers: { Key: reporter.key } });
const balance = async () => ((await (await h.call("GET", "/v1/credits/balance", { headers: reporter.jwt })).json()) as { data: { balance: number } }).data.balance;

test("report, clear, report again within 15 minutes: the 15-minute rule still holds", async () => {
  expect((await report()).status).toBe(200);
  expect((await report()).status).toBe(429);
  expect(((await (await clear()).json()) as { data: { numReportsDeleted: number } }).data.numReportsDeleted).toBe(2);
  h.clock.advance(60_000);
  // Observed: 200, a new pair of reports one minute after the first.
  expect((await report()).status).toBe(429);
});

test("ten rounds of report + clear leave no report and no credit behind", async () => {
  h.clock.advance(16 * 60_000);
  await clear();
  const before = await balance();
  for (let i = 0; i < 10; i++) {
    await report();
    await clear();
    h.clock.advance(1_000);
  }
  const stored = (h.store.sqlite.query("SELECT count(*) AS n FROM reports WHERE reporter_id = ?").get(reporter.user.id) as { n: number }).n;
  expect(stored).toBe(0);
  // Observed: +20 credits (one per category per round) for reports that no longer exist.
  expect((await balance()) - before).toBe(0);
});
