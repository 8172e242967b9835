// Review (intake): one report of a group-commit batch fails a constraint (injected with a trigger on the real
// database file: the second category of one /api/v2 report). The others of the batch still commit, each client
// gets its own answer, and credits and ip.reported events match exactly the reports stored.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { databasePath } from "../../src/store/database";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
const users: TestUser[] = [];
beforeAll(async () => {
  h = await createHarness();
  for (let i = 0; i < 3; i++) users.push(await addUser(h, { tier: "enterprise" }));
  h.clock.set("2026-11-21T08:00:00.000Z");
  // A subscriber, so that ip.reported events are kept in the outbox and can be counted.
  const res = await h.call("POST", "/v1/webhooks", { headers: users[0].jwt, json: { url: "http://127.0.0.1:9/hook", events: ["ip.reported"] } });
  expect(res.status).toBe(201);
  const other = new Database(databasePath(h.dataDir));
  other.exec(`CREATE TRIGGER review_fail BEFORE INSERT ON reports WHEN NEW.ip = '203.0.113.66' AND NEW.category = 'SSH'
              BEGIN SELECT RAISE(ABORT, 'review: injected constraint failure'); END`);
  other.close();
});
afterAll(() => h.close());

const count = (sql: string, ...args: (string | number)[]) => (h.store.sqlite.query(sql).get(...args) as { n: number }).n;

test("a batch with one failing report: the rest commit, every client gets its own answer, credits and events match", async () => {
  const calls: Promise<Response>[] = [];
  for (let i = 0; i < 40; i++) {
    if (i === 20) {
      // 18 = BRUTE_FORCE is written first, then 22 = SSH fails: the whole submission must go, not half of it.
      calls.push(fetch(`${h.url}/api/v2/report`, { method: "POST", headers: { Key: users[1].key }, body: new URLSearchParams({ ip: "203.0.113.66", categories: "18,22" }) }));
    } else {
      calls.push(h.call("POST", "/v1/ip/report", { headers: users[i % 3].jwt, json: { ip: `198.18.7.${i}`, category: "SPAM", severity: 3 } }));
    }
  }
  const responses = await Promise.all(calls);
  const statuses = responses.map((r) => r.status);
  const bodies = await Promise.all(responses.map((r) => r.json() as Promise<{ data?: { creditBalance?: number } }>));
  expect(h.services.reports.stats.largestBatch).toBeGreaterThan(1);
  expect(statuses).toEqual(statuses.map((_, i) => (i === 20 ? 500 : 201)));
  expect(count("SELECT count(*) AS n FROM reports WHERE ip = '203.0.113.66'")).toBe(0);
  expect(count("SELECT count(*) AS n FROM reports")).toBe(39);
  expect(count("SELECT count(*) AS n FROM credit_ledger")).toBe(39);
  expect((h.store.sqlite.query("SELECT balance AS b FROM credit_balances ORDER BY user_id").all() as { b: number }[]).map((r) => r.b)).toEqual([14, 13, 12]);
  // Each user's balances in the answers are 1..n, each once.
  for (let u = 0; u < 3; u++) {
    const seen = bodies.filter((_, i) => i !== 20 && i % 3 === u).map((b) => b.data!.creditBalance!).sort((a, b) => a - b);
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, k) => k + 1));
  }
  expect(count("SELECT count(*) AS n FROM outbox WHERE event = 'ip.reported'")).toBe(39);
  expect(count("SELECT count(*) AS n FROM addresses WHERE ip = '203.0.113.66'")).toBe(0);
});
