// The edge's follower against a real primary (the test harness) and its snapshot route:
// - an edge stopped after a download was complete but before its verification ended leaves the whole file as
//   incoming.partial with its ETag; the next pull asks for the rest and the primary answers 416: the partial is
//   dropped and the whole file fetched again at once, instead of every pull failing the same way until the
//   primary writes another snapshot (daily by default);
// - a snapshot that does not verify with the edge's key is refused, and not downloaded again on every pull: the
//   edge asks with its ETag (a 304) and keeps saying why; a new snapshot gets its chance;
// - a download that stalls, or drips, is given up at its deadline and says why; the next pull resumes it;
// - a snapshot that keeps arriving damaged is downloaded again at the next pull, then only after a wait;
// - a body that has already arrived is written to disk a chunk per turn of the event loop, not in one hold;
// - snapshots let go of are renamed out of the way at once and unlinked off the event loop: gone when the pull that
//   replaced them resolves, and what an earlier run left half removed is removed at start.

import { afterEach, beforeEach, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { systemClock } from "../../../../src/domain/clock";
import { SnapshotFollower } from "../../../../src/services/edge/follower";
import { exportSnapshot } from "../../../../src/services/snapshots/export";
import { readPublicKey, writeKeyPair } from "../../../../src/services/snapshots/signing";
import { addUser } from "../../../support/accounts";
import { turnsTaken } from "../../../support/event-loop-watch";
import { createHarness, type Harness } from "../../../support/harness";
import { dripping, flippedInTransit, reportAndExport, scriptedPrimary, type ScriptedPrimary, serveFile, stallAfter } from "../../../support/scripted-primary";

let h: Harness;
let dir: string;
beforeEach(async () => {
  h = await createHarness();
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-edge-follower-"));
});
const primaries: ScriptedPrimary[] = [];
afterEach(async () => {
  for (const p of primaries.splice(0)) p.stop();
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

test("a complete partial left by an interrupted verification does not wedge the edge", async () => {
  const admin = await addUser(h, { role: "admin", tier: "enterprise" });
  const keys = writeKeyPair(join(dir, "k"));
  const snapDir = join(h.dataDir, "snapshots");
  mkdirSync(snapDir, { recursive: true });
  const file = join(snapDir, "abuse-intel-20260101T000000Z.sqlite");
  const exported = await exportSnapshot({ store: h.store, services: h.services, out: file, signKey: keys.privatePath, nowMs: h.clock.now() });

  // The edge's directory as a kill during verification leaves it: the whole file, and its ETag.
  const edgeDir = join(dir, "edge");
  mkdirSync(edgeDir, { recursive: true });
  copyFileSync(file, join(edgeDir, "incoming.partial"));
  writeFileSync(join(edgeDir, "incoming.etag"), `"${exported.sha256}"`);

  const adopted: string[] = [];
  const follower = new SnapshotFollower({
    url: h.url, key: admin.key, publicKey: readPublicKey(keys.publicPath), directory: edgeDir, clock: systemClock,
    onSnapshot: async (p) => { adopted.push(p); },
  });
  expect(await follower.pull()).toBe("updated");
  expect(follower.state.lastError).toBeNull();
  expect(adopted).toHaveLength(1);
  expect(readdirSync(edgeDir).filter((f) => f.startsWith("incoming"))).toEqual([]);
  expect(await follower.pull()).toBe("unchanged");
});

test("a refused snapshot is asked for with its ETag, not downloaded again; the next one is taken", async () => {
  const admin = await addUser(h, { role: "admin", tier: "enterprise" });
  const ours = writeKeyPair(join(dir, "ours"));
  const theirs = writeKeyPair(join(dir, "theirs"));
  const snapshots = join(h.dataDir, "snapshots");
  mkdirSync(snapshots, { recursive: true });
  await exportSnapshot({ store: h.store, services: h.services, out: join(snapshots, "abuse-intel-20260101T000000Z.sqlite"), signKey: theirs.privatePath, nowMs: h.clock.now() });

  const statuses: number[] = [];
  const follower = new SnapshotFollower({
    url: h.url,
    key: admin.key,
    publicKey: readPublicKey(ours.publicPath),
    directory: join(dir, "edge"),
    clock: systemClock,
    onSnapshot: async () => {},
    fetch: (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    }) as typeof fetch,
  });
  expect(await follower.pull()).toBe("failed");
  const reason = follower.state.lastError;
  expect(reason).toContain("the signature does not match the public key");
  expect(await follower.pull()).toBe("failed");
  expect(follower.state.lastError).toBe(reason);
  expect(statuses).toEqual([200, 304]);

  await exportSnapshot({ store: h.store, services: h.services, out: join(snapshots, "abuse-intel-20260102T000000Z.sqlite"), signKey: ours.privatePath, nowMs: h.clock.now() });
  expect(await follower.pull()).toBe("updated");
  expect(follower.state.lastError).toBeNull();
  expect(statuses).toEqual([200, 304, 200]);
});

/** A signed snapshot of the harness, the public key that verifies it, and a follower of `primary` with `options`. */
async function snapshotAndFollower(options: { stallMs?: number; deadlineMs?: number; fetch?: typeof fetch } = {}) {
  const keys = writeKeyPair(join(dir, "k"));
  const file = join(dir, "snapshot.sqlite");
  await exportSnapshot({ store: h.store, services: h.services, out: file, signKey: keys.privatePath, nowMs: h.clock.now() });
  const adopted: string[] = [];
  const follow = (primary: ScriptedPrimary) => {
    primaries.push(primary);
    return new SnapshotFollower({
      url: primary.url, key: "aik_key", publicKey: readPublicKey(keys.publicPath), directory: join(dir, "edge"), clock: h.clock,
      onSnapshot: async (p) => { adopted.push(p); }, ...options,
    });
  };
  return { file, adopted, follow };
}

test("a download that stalls is given up, says why, and the next pull resumes it", async () => {
  const { file, adopted, follow } = await snapshotAndFollower({ stallMs: 2_000 }); // far above any pause of a loaded machine
  const stalled = stallAfter(file, 4096);
  const good = serveFile(file);
  const primary = scriptedPrimary((request, n) => (n === 1 ? stalled(request, n) : good(request, n)));
  const follower = follow(primary);
  expect(await follower.pull()).toBe("failed");
  expect(follower.state.lastError).toBe("the primary sent nothing for 2 s: given up, the next pull resumes it");
  expect(statSync(join(dir, "edge", "incoming.partial")).size).toBe(4096);
  expect(await follower.pull()).toBe("updated");
  expect(primary.statuses).toEqual([200, 206]);
  expect(adopted).toHaveLength(1);
  expect(follower.state.lastError).toBeNull();
}, 30_000);

test("a download that drips, never stalling, is given up at the pull's deadline", async () => {
  const { file, follow } = await snapshotAndFollower({ stallMs: 2_000, deadlineMs: 4_000 });
  const follower = follow(scriptedPrimary(dripping(file, 20)));
  // Given up, not finished: the drip would have delivered the whole file and the pull been "updated".
  expect(await follower.pull()).toBe("failed");
  expect(follower.state.lastError).toBe("the download was not done after 4 s: given up, the next pull resumes it");
}, 30_000);

test("a snapshot that keeps arriving damaged is downloaded again at the next pull, then only after a wait", async () => {
  const { file, adopted, follow } = await snapshotAndFollower();
  const primary = scriptedPrimary(flippedInTransit(file));
  const follower = follow(primary);
  expect(await follower.pull()).toBe("failed");
  expect(follower.state.lastError).toContain("does not verify");
  expect(await follower.pull()).toBe("failed");
  expect(follower.state.lastError).toContain("arrived damaged 2 times; downloaded again after");
  expect(await follower.pull()).toBe("failed");
  expect(primary.statuses).toEqual([200, 200, 304]);
  // A minute later it gets another chance, and this time it arrives whole.
  h.clock.advance(61_000);
  primary.answer = serveFile(file);
  expect(await follower.pull()).toBe("updated");
  expect(primary.statuses).toEqual([200, 200, 304, 200]);
  expect(adopted).toHaveLength(1);
});

test("a body already received is written a chunk per turn of the event loop, so requests are answered meanwhile", async () => {
  const CHUNK = 64 * 1024;
  let bytes = new Uint8Array(0);
  // The primary's whole answer, as a stream whose every chunk is there before the first read: what a fast primary
  // on a local network looks like. Each read then resolves at once, without a turn of the event loop.
  const received = (async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += CHUNK) controller.enqueue(bytes.slice(at, at + CHUNK));
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { etag: '"the-snapshot"' } });
  }) as unknown as typeof fetch;
  const { file, adopted, follow } = await snapshotAndFollower({ fetch: received });
  bytes = new Uint8Array(readFileSync(file));
  const chunks = Math.ceil(bytes.length / CHUNK);
  expect(chunks).toBeGreaterThan(10);
  const follower = follow(scriptedPrimary(serveFile(file)));
  const { value, turns } = await turnsTaken(() => follower.pull());
  expect(value).toBe("updated");
  expect(adopted).toHaveLength(1);
  expect(readFileSync(adopted[0]!).equals(readFileSync(file))).toBe(true);
  // Written in one go (as before), other work got no turn at all between the chunks; now about one a chunk.
  expect(turns).toBeGreaterThanOrEqual(chunks / 2);
}, 60_000);

test("snapshots let go of are unlinked off the event loop, gone once the pull resolves; leftovers removed at start", async () => {
  const keys = writeKeyPair(join(dir, "k"));
  const files = [1, 2, 3].map((n) => join(dir, `snapshot-${n}.sqlite`));
  for (const file of files) {
    h.clock.advance(60_000);
    await reportAndExport(h, "198.51.100.7", file, keys.privatePath);
  }
  const edgeDir = join(dir, "edge");
  mkdirSync(edgeDir, { recursive: true });
  // What a run stopped while unlinking leaves behind.
  writeFileSync(join(edgeDir, "discarded-4-current-0123456789abcdef.sqlite"), "left over");
  const primary = scriptedPrimary(serveFile(files[0]!));
  primaries.push(primary);
  const follower = new SnapshotFollower({
    url: primary.url, key: "aik_key", publicKey: readPublicKey(keys.publicPath), directory: edgeDir, clock: h.clock,
    onSnapshot: async () => {},
  });
  const names = () => readdirSync(edgeDir).sort();
  for (let i = 0; i < 3; i++) {
    primary.answer = serveFile(files[i]!);
    expect(await follower.pull()).toBe("updated");
  }
  // The one served and the one before it: the first is gone when the pull that let go of it resolved.
  const current = names().filter((n) => n.startsWith("current-"));
  expect(current).toHaveLength(2);
  expect(current).toContain(basename(follower.state.current!));
  expect(names().filter((n) => n.startsWith("discarded-") && !n.startsWith("discarded-4-"))).toEqual([]);
  // The leftover is unlinked in the background from the start: waited for.
  for (const deadline = Date.now() + 20_000; names().some((n) => n.startsWith("discarded-4-")) && Date.now() < deadline; ) await Bun.sleep(50);
  expect(names().filter((n) => !n.startsWith("current-"))).toEqual([]);
}, 60_000);
