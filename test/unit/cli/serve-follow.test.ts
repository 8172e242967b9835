// `serve --follow` (the real CLI, in its own process) against a scripted primary whose snapshots are made by the
// real exporter and signed with the primary's key:
// - a snapshot older than the one served (validly signed) is refused and says why in /readyz, not downloaded
//   again, and the primary going back to the one served is no error;
// - a validly signed snapshot that cannot be opened is refused, not kept, and not downloaded again; one left in
//   the edge's directory (a stop between the download and the swap) does not stop the edge's restart;
// - a transfer damaged on the way is fetched again at the next pull (the primary's file is fine).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, readdirSync, rmSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { type EdgeProcess, startEdge, within } from "../../support/edge-process";
import { damagedButSigned, etagOf, flippedInTransit, reportAndExport, type ScriptedPrimary, scriptedPrimary, serveFile, signedSnapshots } from "../../support/scripted-primary";

const IP = "198.51.100.77";
let dir: string;
let older: string; // 1 report on IP
let newer: string; // 2 reports on IP, made a day later
let damaged: string; // newer, its pre-built IPv4 tree replaced by garbage, hashed and signed again
let keyPrefix: string;
const running: (EdgeProcess | ScriptedPrimary)[] = [];

beforeAll(async () => {
  ({ dir, keyPrefix } = await signedSnapshots("abuse-intel-serve-follow-", async (h, dir, signKey) => {
    older = join(dir, "older.sqlite");
    newer = join(dir, "newer.sqlite");
    damaged = join(dir, "damaged.sqlite");
    await reportAndExport(h, IP, older, signKey);
    h.clock.advance(24 * 3600 * 1000);
    await reportAndExport(h, IP, newer, signKey);
    damagedButSigned(newer, damaged, signKey, "UPDATE index_data SET bytes = randomblob(64) WHERE name = 'v4'");
  }));
});
afterAll(async () => {
  for (const r of running) await r.stop();
  rmSync(dir, { recursive: true, force: true });
});

function primaryServing(file: string): ScriptedPrimary {
  const primary = scriptedPrimary(serveFile(file));
  running.push(primary);
  return primary;
}

async function edgeOn(primary: ScriptedPrimary, name: string): Promise<EdgeProcess> {
  const edge = await startEdge(join(dir, name), primary.url, `${keyPrefix}.pub`);
  running.push(edge);
  return edge;
}

const serving = (edge: EdgeProcess, totalReports: number) =>
  within(60_000, async () => ((await edge.reputation(IP)).totalReports === totalReports ? true : null));
const pullError = (edge: EdgeProcess, containing: string) =>
  within(60_000, async () => ((await edge.readyz()).edge.lastPullError?.includes(containing) ? (await edge.readyz()).edge.lastPullError : null));
const snapshotFiles = (edge: EdgeProcess) => readdirSync(join(edge.dataDir, "edge")).filter((n) => n.startsWith("current-")).sort();
const fileNameOf = (snapshot: string) => `current-${etagOf(snapshot).slice(1, 17)}.sqlite`;

test("an edge never goes back to an older snapshot than the one it serves (rollback)", async () => {
  const primary = primaryServing(newer);
  const edge = await edgeOn(primary, "rollback");
  expect(await serving(edge, 2)).toBe(true);
  // The primary (or whoever answers for it on the way) now hands out the snapshot of the day before, validly signed.
  primary.answer = serveFile(older);
  const from = primary.statuses.length;
  expect(await pullError(edge, "never goes back")).toContain("not after the one served");
  expect(await edge.reputation(IP)).toEqual({ status: 200, totalReports: 2 });
  // Asked for with its ETag from then on: one download to find out, then 304s.
  expect(await within(60_000, async () => (primary.statuses.length >= from + 2 ? true : null))).toBe(true);
  expect(primary.statuses.slice(from + 1)).not.toContain(200);
  expect(snapshotFiles(edge)).toEqual([fileNameOf(newer)]);

  // The primary back on the snapshot the edge serves: nothing new, and no error.
  primary.answer = serveFile(newer);
  expect(await within(60_000, async () => ((await edge.readyz()).edge.lastPullError === null ? true : null))).toBe(true);
  expect(await edge.reputation(IP)).toEqual({ status: 200, totalReports: 2 });
}, 240_000);

test("a validly signed snapshot that cannot be opened is refused and not kept; the edge restarts on the last good one", async () => {
  const primary = primaryServing(older);
  const edge = await edgeOn(primary, "cannot-open");
  expect(await serving(edge, 1)).toBe(true);
  primary.answer = serveFile(damaged);
  expect(await pullError(edge, "verifies but cannot be served")).not.toBeNull();
  expect(await edge.reputation(IP)).toEqual({ status: 200, totalReports: 1 });
  expect(snapshotFiles(edge)).toEqual([fileNameOf(older)]);
  await edge.stop();

  // As an edge stopped between the download and the swap leaves it: the unusable file beside the good one, newer.
  const left = join(edge.dataDir, "edge", fileNameOf(damaged));
  copyFileSync(damaged, left);
  utimesSync(left, new Date(), new Date(Date.now() + 60_000));
  const restarted = await edgeOn(primary, "cannot-open");
  expect(await within(60_000, async () => ((await restarted.readyz()).status === 200 ? true : null))).toBe(true);
  expect({ exitCode: restarted.proc.exitCode, answer: await restarted.reputation(IP) }).toEqual({ exitCode: null, answer: { status: 200, totalReports: 1 } });
  expect(restarted.output()).toContain("verifies but cannot be served, removed");
}, 240_000);

test("a snapshot that verifies but cannot be opened is downloaded once, not on every pull", async () => {
  const primary = primaryServing(older);
  const edge = await edgeOn(primary, "cannot-open-once");
  expect(await serving(edge, 1)).toBe(true);
  const from = primary.statuses.length;
  primary.answer = serveFile(damaged);
  expect(await within(60_000, async () => (primary.statuses.length >= from + 3 ? true : null))).toBe(true);
  expect(primary.statuses.slice(from).filter((s) => s === 200)).toHaveLength(1);
}, 240_000);

test("one transfer damaged on the way does not keep the edge off that snapshot until the primary makes another", async () => {
  const good = serveFile(newer);
  const damagedOnce = flippedInTransit(newer);
  const primary = scriptedPrimary((request, n) => (n === 1 ? damagedOnce(request, n) : good(request, n)));
  running.push(primary);
  const edge = await edgeOn(primary, "transit");
  expect(await serving(edge, 2)).toBe(true);
  expect(primary.statuses.slice(0, 2)).toEqual([200, 200]);
  expect((await edge.readyz()).edge.lastPullError).toBeNull();
}, 240_000);
