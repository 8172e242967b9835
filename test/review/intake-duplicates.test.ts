// Review (intake): the 15-minute rule under concurrency, across /v1, /api/v2/report and /api/v2/bulk-report at once:
// exactly one report per (reporter, address) is stored, with exactly one credit and one ip.reported event.

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

const count = (sql: string, ...args: (string | number)[]) => (h.store.sqlite.query(sql).get(...args) as { n: number }).n;

test("30 identical reports at once over three paths: one stored, one credit, one event", async () => {
  const ip = "203.0.113.77";
  const csv = ["IP,Categories,ReportDate,Comment", `${ip},22,2026-11-21T08:00:00Z,a`, `${ip},22,2026-11-21T08:00:00Z,b`].join("\n");
  const calls: Promise<Response>[] = [];
  for (let i = 0; i < 10; i++) {
    calls.push(h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ip, category: "SSH", severity: 3 } }));
    calls.push(fetch(`${h.url}/api/v2/report`, { method: "POST", headers: { Key: reporter.key }, body: new URLSearchParams({ ip, categories: "22" }) }));
    const form = new FormData();
    form.append("csv", new Blob([csv]), "r.csv");
    calls.push(fetch(`${h.url}/api/v2/bulk-report`, { method: "POST", headers: { Key: reporter.key }, body: form }));
  }
  const responses = await Promise.all(calls);
  let accepted = 0;
  for (const res of responses) {
    const body = (await res.json()) as { data?: { savedReports?: number } };
    if (res.status === 201 || (res.status === 200 && body.data?.savedReports === undefined)) accepted++;
    else if (res.status === 200) accepted += body.data!.savedReports!;
  }
  expect(accepted).toBe(1);
  expect(count("SELECT count(*) AS n FROM reports WHERE ip = ?", ip)).toBe(1);
  expect(count("SELECT count(*) AS n FROM credit_ledger WHERE user_id = ?", reporter.user.id)).toBe(1);
  expect(count("SELECT count(*) AS n FROM outbox WHERE event = 'ip.reported' AND data LIKE ?", `%${ip}%`)).toBeLessThanOrEqual(1);
});
