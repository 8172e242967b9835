// An edge refuses a snapshot that does not verify with its key, and does not download the same one again on
// every pull: it asks with its ETag (a 304) and keeps saying why it is refused; a new snapshot gets its chance.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../../../src/domain/clock";
import { SnapshotFollower } from "../../../../src/services/edge/follower";
import { exportSnapshot } from "../../../../src/services/snapshots/export";
import { readPublicKey, writeKeyPair } from "../../../../src/services/snapshots/signing";
import { addUser } from "../../../support/accounts";
import { createHarness, type Harness } from "../../../support/harness";

let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await createHarness();
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-edge-refused-"));
});
afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
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
