// Community verification (contract 5.5: "at least 3 distinct reporters reported the same address and category
// within 7 days") measures the 7 days between the reports, not back from when the verify job runs: three reports
// within 7 days of each other are verified by the run after the third, even when that run comes a little more
// than 7 days after the first (the next minute's tick, an hourly schedule, a restart).

import { afterEach, beforeEach, expect, test } from "bun:test";
import { DAY_MS } from "../../../src/domain/scoring";
import { createJobsFixture, type JobsFixture } from "./jobs-fixture";

let f: JobsFixture;
beforeEach(async () => {
  f = await createJobsFixture(3);
});
afterEach(() => f.close());

const statuses = () => (f.h.store.sqlite.query("SELECT status FROM reports ORDER BY id").all() as { status: string }[]).map((r) => r.status);

test("3 reporters within 7 days of each other are verified by the first verify run after the third report", async () => {
  f.subscribe(["ip.verified"]);
  const [a, b, c] = f.reporters;
  await f.report("203.0.113.7", { category: "ssh" }, a);
  f.h.clock.advance(3 * DAY_MS);
  await f.report("203.0.113.7", { category: "ssh" }, b);
  // The third report 6 days 23 h 59 min 30 s after the first: all three lie within 7 days.
  f.h.clock.advance(4 * DAY_MS - 30_000);
  await f.report("203.0.113.7", { category: "ssh" }, c);
  // The every-minute job's next tick, 40 s later.
  f.h.clock.advance(40_000);
  const run = await f.run("verify");
  expect(run.lastError).toBeNull();
  expect(run.lastResult).toEqual({ groups: 1, verified: 3 });
  expect(statuses()).toEqual(["verified", "verified", "verified"]);
  expect((await f.delivered()).map((e) => e.event)).toEqual(["ip.verified", "ip.verified", "ip.verified"]);
});

test("the same when an earlier run left its cursor: the run after the third report looks back from it", async () => {
  const [a, b, c] = f.reporters;
  expect((await f.run("verify")).lastError).toBeNull();
  await f.report("203.0.113.8", { category: "ssh" }, a);
  f.h.clock.advance(3 * DAY_MS);
  await f.report("203.0.113.8", { category: "ssh" }, b);
  expect((await f.run("verify")).lastResult).toEqual({ groups: 0, verified: 0 });
  f.h.clock.advance(4 * DAY_MS - 30_000);
  await f.report("203.0.113.8", { category: "ssh" }, c);
  f.h.clock.advance(40_000);
  expect((await f.run("verify")).lastResult).toEqual({ groups: 1, verified: 3 });
  expect(statuses()).toEqual(["verified", "verified", "verified"]);
});

test("reporters more than 7 days apart are not: the third report 7 days and 1 s after the first", async () => {
  const [a, b, c] = f.reporters;
  await f.report("203.0.113.9", { category: "ssh" }, a);
  f.h.clock.advance(3 * DAY_MS);
  await f.report("203.0.113.9", { category: "ssh" }, b);
  f.h.clock.advance(4 * DAY_MS + 1_000);
  await f.report("203.0.113.9", { category: "ssh" }, c);
  expect((await f.run("verify")).lastResult).toEqual({ groups: 0, verified: 0 });
  expect(statuses()).toEqual(["pending", "pending", "pending"]);
});
