import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { DAY_MS } from "../../../src/domain/scoring";
import { rescoreJob } from "../../../src/jobs/rescore";
import { bodyOf } from "../../support/harness";
import { createJobsFixture, type JobsFixture } from "./jobs-fixture";

let f: JobsFixture;
beforeEach(async () => {
  f = await createJobsFixture();
});
afterEach(() => f.close());

const reputation = async (ip: string) => (await bodyOf(await f.h.call("GET", `/v1/ip/${ip}/reputation`, { headers: f.reporters[0].apiKey }))).data;
const stored = (ip: string) =>
  f.h.store.sqlite.query("SELECT reputation_score AS score, scored_at AS scoredAt, rescore_due_at AS due FROM addresses WHERE ip = ?").get(ip) as {
    score: number;
    scoredAt: number;
    due: number;
  };

describe("rescore", () => {
  test("a decayed score moves in the store, the index, the response cache and the index generation", async () => {
    await f.report("203.0.113.7", { severity: 5 });
    // Fresh: w = 1.0, round(100 × e^(−1/1.5)) = 51.
    expect(await reputation("203.0.113.7")).toMatchObject({ reputationScore: 51, riskLevel: "MEDIUM", cached: false });
    expect(await reputation("203.0.113.7")).toMatchObject({ reputationScore: 51, cached: true });

    f.h.clock.advance(30 * DAY_MS);
    // Nothing rescored yet: the index still holds the score of 30 days ago.
    expect(await reputation("203.0.113.7")).toMatchObject({ reputationScore: 51, cached: true });
    const generation = f.h.services.index.generation;

    const status = await f.run("rescore");

    // After one half-life: w = 0.5, round(100 × e^(−0.5/1.5)) = 72.
    const expected = Math.round(100 * Math.exp(-(1.0 * 0.5 ** (30 / 30)) / 1.5));
    expect(expected).toBe(72);
    expect(status).toMatchObject({ lastError: null, lastResult: { rescored: 1, scoreChanged: 1, removed: 0, more: false } });
    expect(await reputation("203.0.113.7")).toMatchObject({ reputationScore: 72, riskLevel: "MEDIUM", totalReports: 1, cached: false });
    expect((await bodyOf(await f.h.call("GET", "/v1/ip/203.0.113.7", { headers: f.reporters[0].apiKey }))).abuse_confidence).toBe(28);
    expect(f.h.services.index.generation).toBeGreaterThan(generation);
    const row = stored("203.0.113.7");
    expect(row.score).toBe(72);
    expect(row.scoredAt).toBe(f.h.clock.now());
    expect(row.due).toBeGreaterThan(f.h.clock.now());

    // Nothing is due again until the score would move.
    expect((await f.run("rescore")).lastResult).toEqual({ rescored: 0, scoreChanged: 0, removed: 0, more: false });
  });

  test("only addresses that are due are taken", async () => {
    await f.report("203.0.113.7");
    f.h.clock.advance(60_000);
    await f.report("203.0.113.8");
    const due = stored("203.0.113.7").due;
    f.h.clock.set(due); // the first address's score moves now; the second's later
    expect((await f.run("rescore")).lastResult).toMatchObject({ rescored: 1, scoreChanged: 1 });
  });

  test("bounded: at most maxPerRun addresses per run, in batches; the rest are left for the next run", async () => {
    for (let i = 1; i <= 5; i++) await f.report(`203.0.113.${i}`);
    f.h.clock.advance(30 * DAY_MS);
    const { store, scorer, addressChanges } = f.h.services;
    const announced: string[] = [];
    addressChanges.onAddressChanged((ip) => announced.push(ip.text));
    const job = rescoreJob({ store, scorer, changes: addressChanges }, { batchSize: 2, maxPerRun: 3 });

    expect(await job.run({ now: f.h.clock.now() })).toEqual({ rescored: 3, scoreChanged: 3, removed: 0, more: true });
    expect(announced).toHaveLength(3);
    expect(await job.run({ now: f.h.clock.now() })).toEqual({ rescored: 2, scoreChanged: 2, removed: 0, more: false });
    expect(new Set(announced).size).toBe(5);
  });
});
