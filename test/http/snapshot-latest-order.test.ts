// The snapshot job's files are ordered by the time their names hold, not as text: a name without milliseconds
// (`...T030000Z.sqlite`) sorted after one made later in the same second (`Z` after the digits), so "latest" and the
// keep-7 pruning took the 03:00:00.000 snapshot for newer than one made at 03:00:00.400.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let admin: TestUser;
beforeAll(async () => {
  h = await createHarness();
  admin = await addUser(h, { role: "admin", tier: "enterprise" });
});
afterAll(() => h.close());

test("GET /v1/snapshots/latest serves the snapshot made last, also within one second", async () => {
  h.clock.set("2026-11-21T03:00:00.000Z"); // the scheduled run, on the second
  expect((await h.call("POST", "/v1/admin/jobs/snapshot/run", { headers: admin.jwt })).status).toBe(200);
  h.clock.set("2026-11-21T03:00:00.400Z"); // a run by hand right after
  expect((await h.call("POST", "/v1/admin/jobs/snapshot/run", { headers: admin.jwt })).status).toBe(200);
  const res = await h.call("HEAD", "/v1/snapshots/latest", { headers: admin.apiKey });
  expect(res.status).toBe(200);
  // Observed: 2026-11-21T03:00:00.000Z, the first file (abuse-intel-20261121T030000Z.sqlite sorts after
  // abuse-intel-20261121T030000400Z.sqlite).
  expect(res.headers.get("x-snapshot-created-at")).toBe("2026-11-21T03:00:00.400Z");
}, 120_000);
