import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DAY_MS } from "../../../src/domain/scoring";
import { snapshotFileName } from "../../../src/domain/snapshot-files";
import { snapshotJob } from "../../../src/jobs/snapshot";
import { snapshotInfo, verifySnapshot } from "../../../src/services/snapshots/export";
import { createJobsFixture, type JobsFixture } from "./jobs-fixture";

let f: JobsFixture;
beforeEach(async () => {
  f = await createJobsFixture();
});
afterEach(() => f.close());

const snapshotDir = () => join(f.h.dataDir, "snapshots");

describe("snapshot", () => {
  test("writes a verifiable snapshot of the instance to <data-dir>/snapshots/ named by its time", async () => {
    await f.report("203.0.113.7");
    const status = await f.run("snapshot");
    expect(status.lastError).toBeNull();
    const file = join(snapshotDir(), "abuse-intel-20261121T080000Z.sqlite");
    expect(status.lastResult).toMatchObject({ file, removed: [] });
    expect(readdirSync(snapshotDir())).toEqual(["abuse-intel-20261121T080000Z.sqlite"]);
    expect(snapshotInfo(file)).toMatchObject({ createdAt: "2026-11-21T08:00:00.000Z", counts: { addresses: 1 } });
    expect(verifySnapshot(file).ok).toBe(true);
  });

  test("keeps the newest 7 of its own files and never touches other files", async () => {
    mkdirSync(snapshotDir(), { recursive: true });
    writeFileSync(join(snapshotDir(), "operator-copy.sqlite"), "mine");
    const names: string[] = [];
    for (let day = 0; day < 9; day++) {
      names.push(snapshotFileName(f.h.clock.now()));
      const status = await f.run("snapshot");
      expect(status.lastError).toBeNull();
      f.h.clock.advance(DAY_MS);
    }
    expect(readdirSync(snapshotDir()).sort()).toEqual([...names.slice(2), "operator-copy.sqlite"].sort());
  }, 300_000); // nine exports: over a minute and a half on a loaded 2-core machine

  test.each([
    [Date.parse("2026-11-21T03:00:00.000Z"), "abuse-intel-20261121T030000Z.sqlite"],
    [Date.parse("2026-11-21T03:00:00.123Z"), "abuse-intel-20261121T030000123Z.sqlite"],
  ])("file name of %d is %s", (ms, name) => {
    expect(snapshotFileName(ms)).toBe(name);
  });

  test("a failing export leaves no file behind and reports the failure", async () => {
    const job = snapshotJob({
      dataDir: f.h.dataDir,
      exporter: (out) => {
        writeFileSync(out, "half");
        throw new Error("the disk is full");
      },
    });
    await expect(Promise.resolve(job.run({ now: f.h.clock.now() }))).rejects.toThrow("the disk is full");
    expect(readdirSync(snapshotDir())).toEqual([]);
  });

  test("without an exporter the job says that snapshots are not available", async () => {
    const job = snapshotJob({ dataDir: f.h.dataDir, exporter: null });
    await expect(Promise.resolve(job.run({ now: f.h.clock.now() }))).rejects.toThrow(/snapshot export is not available/);
    expect(existsSync(snapshotDir())).toBe(false);
  });
});
