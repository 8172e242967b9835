import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { DAY_MS } from "../../../src/domain/scoring";
import { signatureMatches } from "../../../src/domain/webhook-payload";
import { createJobsFixture, type JobsFixture, SECRET } from "./jobs-fixture";

let f: JobsFixture;
beforeEach(async () => {
  f = await createJobsFixture(4);
});
afterEach(() => f.close());

const statuses = () => (f.h.store.sqlite.query("SELECT status FROM reports ORDER BY id").all() as { status: string }[]).map((r) => r.status);

describe("verify", () => {
  test("3 distinct reporters within 7 days: one ip.verified per report at a real receiver, and none again on the next run", async () => {
    f.subscribe(["ip.verified"]);
    const [a, b, c, d] = f.reporters;
    const ids = [await f.report("203.0.113.7", { category: "ssh" }, a)];
    f.h.clock.advance(3 * DAY_MS);
    ids.push(await f.report("203.0.113.7", { category: "ssh" }, b));
    expect((await f.run("verify")).lastResult).toEqual({ groups: 0, verified: 0 });
    f.h.clock.advance(3 * DAY_MS);
    ids.push(await f.report("203.0.113.7", { category: "ssh" }, c));

    expect((await f.run("verify")).lastResult).toEqual({ groups: 1, verified: 3 });
    expect(statuses()).toEqual(["verified", "verified", "verified"]);
    const first = await f.delivered();
    expect(first.map((e) => [e.event, e.data.ip, e.data.category, e.data.reportId])).toEqual(ids.map((id) => ["ip.verified", "203.0.113.7", "ssh", id]));
    expect(new Set(f.receiver.requests.map((r) => r.headers.get("x-webhook-delivery"))).size).toBe(3);
    for (const r of f.receiver.requests) expect(signatureMatches(SECRET, r.raw, r.headers.get("x-webhook-signature") ?? "")).toBe(true);

    // The next run finds nothing new: no event again.
    f.h.clock.advance(60_000);
    expect((await f.run("verify")).lastResult).toEqual({ groups: 0, verified: 0 });
    expect(await f.delivered()).toHaveLength(3);

    // A fourth reporter of the same group within the window: only that report is verified and announced.
    const fourth = await f.report("203.0.113.7", { category: "ssh" }, d);
    expect((await f.run("verify")).lastResult).toEqual({ groups: 1, verified: 1 });
    const all = await f.delivered();
    expect(all).toHaveLength(4);
    expect(all[3].data.reportId).toBe(fourth);
  });
});
