import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { DAY_MS } from "../../../src/domain/scoring";
import { bodyOf } from "../../support/harness";
import { createJobsFixture, type JobsFixture } from "./jobs-fixture";

let f: JobsFixture;
beforeEach(async () => {
  f = await createJobsFixture();
});
afterEach(() => f.close());

describe("expire", () => {
  test("reports past retention become expired with a transition row; younger ones stay; the address leaves the index", async () => {
    const old = await f.report("203.0.113.7");
    f.h.clock.advance(100 * DAY_MS);
    const young = await f.report("203.0.113.8");
    f.h.clock.advance(265 * DAY_MS + 1); // the first report is 365 days and 1 ms old

    expect((await f.run("expire")).lastResult).toEqual({ expired: 1, addresses: 1 });

    const rows = f.h.store.sqlite.query("SELECT id, status, status_changed_at AS changedAt FROM reports ORDER BY id").all();
    expect(rows).toEqual([
      { id: Number(old), status: "expired", changedAt: f.h.clock.now() },
      { id: Number(young), status: "pending", changedAt: f.h.clock.now() - 265 * DAY_MS - 1 },
    ]);
    const transitions = f.h.store.sqlite
      .query("SELECT from_status AS fromStatus, to_status AS toStatus, at, actor_user_id AS actor, reason FROM report_transitions WHERE report_id = ? ORDER BY id")
      .all(Number(old));
    expect(transitions).toEqual([
      { fromStatus: null, toStatus: "pending", at: f.h.clock.now() - 365 * DAY_MS - 1, actor: f.reporters[0].user.id, reason: "api" },
      { fromStatus: "pending", toStatus: "expired", at: f.h.clock.now(), actor: null, reason: "retention" },
    ]);
    const detail = await bodyOf(await f.h.call("GET", "/v1/ip/203.0.113.7", { headers: f.reporters[0].apiKey }));
    expect(detail).toMatchObject({ reports: 0, reputationScore: 100, lastSeen: null });

    // Done once: the next run has nothing to do.
    expect((await f.run("expire")).lastResult).toEqual({ expired: 0, addresses: 0 });
  });
});
