// Review (edges): a read-only edge (`serve --follow`, the real CLI) against a scripted primary. Snapshots are
// made by the real exporter and signed with the primary's key; the primary's answers are what each test needs
// (an older snapshot, a damaged one that is validly signed, a stalled body, a body damaged in transit).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeKeyPair } from "../../src/services/snapshots/signing";
import { createHarness } from "../support/harness";
import { damagedButSigned, type EdgeProcess, fakePrimary, type FakePrimary, flippedInTransit, reportAndExport, serveFile, stallAfter, startEdge, within } from "./edge-support";

const IP = "198.51.100.77";
let dir: string;
let older: string; // 1 report on IP
let newer: string; // 2 reports on IP, made a day later
let damaged: string; // newer, its pre-built IPv4 tree replaced by garbage, hashed and signed again
let keyPrefix: string;
const running: (EdgeProcess | FakePrimary)[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "review edge follow "));
  keyPrefix = join(dir, "primary");
  writeKeyPair(keyPrefix);
  const h = await createHarness();
  try {
    older = join(dir, "older.sqlite");
    newer = join(dir, "newer.sqlite");
    damaged = join(dir, "damaged.sqlite");
    await reportAndExport(h, IP, older, `${keyPrefix}.key`);
    h.clock.advance(24 * 3600 * 1000);
    await reportAndExport(h, IP, newer, `${keyPrefix}.key`);
    damagedButSigned(newer, damaged, `${keyPrefix}.key`, "UPDATE index_data SET bytes = randomblob(64) WHERE name = 'v4'");
  } finally {
    await h.close();
  }
});
afterAll(async () => {
  for (const r of running) await ("proc" in r ? r.stop() : r.stop());
  rmSync(dir, { recursive: true, force: true });
});

async function edgeOn(primary: FakePrimary, name: string): Promise<EdgeProcess> {
  const edge = await startEdge(join(dir, name), primary.url, `${keyPrefix}.pub`);
  running.push(edge);
  return edge;
}

test("an edge never goes back to an older snapshot than the one it serves (rollback)", async () => {
  const primary = fakePrimary(serveFile(newer));
  running.push(primary);
  const edge = await edgeOn(primary, "edge-rollback");
  expect(await within(10_000, async () => ((await edge.reputation(IP)).totalReports === 2 ? true : null))).toBe(true);
  // The primary (or whoever answers for it on the way) now hands out the snapshot of the day before, validly signed.
  primary.answer = serveFile(older);
  const seen = primary.requests;
  await within(8_000, async () => (primary.requests >= seen + 3 ? true : null));
  await Bun.sleep(1_500);
  expect((await edge.reputation(IP)).totalReports).toBe(2);
  expect((await edge.readyz()).body.edge?.lastPullError ?? "").not.toBe("");
}, 30_000);

test("a validly signed snapshot that cannot be opened is not adopted, and the edge still starts after a restart", async () => {
  const primary = fakePrimary(serveFile(older));
  running.push(primary);
  const dataDir = "edge-damaged";
  const edge = await edgeOn(primary, dataDir);
  expect(await within(10_000, async () => ((await edge.reputation(IP)).totalReports === 1 ? true : null))).toBe(true);
  primary.answer = serveFile(damaged);
  const error = await within(8_000, async () => (await edge.readyz()).body.edge?.lastPullError ?? null);
  expect(error).not.toBeNull();
  // Still answering from the last good snapshot.
  expect(await edge.reputation(IP)).toEqual({ status: 200, totalReports: 1 });

  // A restart (an upgrade, a reboot) while the primary still publishes the damaged snapshot: the edge has the
  // good one on disk and must come up serving it.
  await edge.stop();
  let restarted: EdgeProcess | null = null;
  let failure = "";
  try {
    restarted = await edgeOn(primary, dataDir);
  } catch (e) {
    failure = (e as Error).message;
  }
  expect(failure).toBe("");
  const ready = await within(8_000, async () => ((await restarted!.readyz()).status === 200 ? true : null));
  expect({ ready, exitCode: restarted!.proc.exitCode, output: ready ? "" : restarted!.output() }).toEqual({ ready: true, exitCode: null, output: "" });
  expect(await restarted!.reputation(IP)).toEqual({ status: 200, totalReports: 1 });
}, 30_000);

test("a snapshot that verifies but cannot be opened is not downloaded again on every pull", async () => {
  const primary = fakePrimary(serveFile(older));
  running.push(primary);
  const edge = await edgeOn(primary, "edge-damaged-again");
  expect(await within(10_000, async () => ((await edge.reputation(IP)).totalReports === 1 ? true : null))).toBe(true);
  const before = primary.statuses.length;
  primary.answer = serveFile(damaged);
  await within(10_000, async () => (primary.statuses.length >= before + 5 ? true : null));
  // One download of the damaged file is needed to find out; then a 304 each time, as for a refused one.
  expect(primary.statuses.slice(before).filter((s) => s === 200).length).toBe(1);
}, 30_000);

test("a pull whose body stalls is given up, and the next pull takes the snapshot", async () => {
  const good = serveFile(newer);
  const stalled = stallAfter(newer, 4096);
  // The first request stalls after 4 KiB; every later one is answered normally.
  const primary = fakePrimary((request, n) => (n === 1 ? stalled(request, n) : good(request, n)));
  running.push(primary);
  const edge = await edgeOn(primary, "edge-stall");
  const served = await within(15_000, async () => ((await edge.reputation(IP)).totalReports === 2 ? true : null));
  expect({ served, requests: primary.requests, readyz: (await edge.readyz()).body }).toMatchObject({ served: true });
}, 30_000);

test("one transfer damaged on the way does not keep the edge off that snapshot until the primary makes another", async () => {
  const good = serveFile(newer);
  const damagedOnce = flippedInTransit(newer);
  const primary = fakePrimary((request, n) => (n === 1 ? damagedOnce(request, n) : good(request, n)));
  running.push(primary);
  const edge = await edgeOn(primary, "edge-transit");
  // The primary's file is fine: a later pull must fetch it again (a retry, with back-off if need be).
  const served = await within(15_000, async () => ((await edge.reputation(IP)).totalReports === 2 ? true : null));
  const why = ((await edge.readyz()).body.edge?.lastPullError ?? "").slice(0, 160);
  expect({ served, statuses: primary.statuses.join(","), why }).toMatchObject({ served: true });
}, 30_000);
