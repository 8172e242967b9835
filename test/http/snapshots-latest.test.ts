// GET /v1/snapshots/latest counts against the daily budget like every /v1 request (contract 4), with the
// rate-limit headers, whether or not there is a snapshot yet; a user who is not an administrator gets 403.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let admin: TestUser;
beforeAll(async () => {
  h = await createHarness();
  admin = await addUser(h, { role: "admin", tier: "pro", dailyLimit: 3 });
});
afterAll(() => h.close());

test("each pull is counted: 404 with the headers while there is no snapshot, then 429 past the budget", async () => {
  const remaining: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await h.call("GET", "/v1/snapshots/latest", { headers: admin.apiKey });
    expect(res.status).toBe(404);
    expect(res.headers.get("x-ratelimit-limit")).toBe("3");
    remaining.push(res.headers.get("x-ratelimit-remaining") ?? "none");
  }
  expect(remaining).toEqual(["2", "1", "0"]);
  const over = await h.call("GET", "/v1/snapshots/latest", { headers: admin.apiKey });
  expect(over.status).toBe(429);
  expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  const user = await addUser(h);
  expect((await h.call("GET", "/v1/snapshots/latest", { headers: user.apiKey })).status).toBe(403);
});
