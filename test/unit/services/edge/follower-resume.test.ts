// An edge stopped after a download was complete but before its verification ended leaves the whole file as
// incoming.partial with its ETag. The next pull asks for the rest (Range from its size, If-Range) and the primary
// answers 416: the partial is dropped and the whole file fetched again at once, instead of every pull failing the
// same way until the primary writes another snapshot (daily by default).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarness, type Harness } from "../../../support/harness";
import { addUser } from "../../../support/accounts";
import { exportSnapshot } from "../../../../src/services/snapshots/export";
import { readPublicKey, writeKeyPair } from "../../../../src/services/snapshots/signing";
import { SnapshotFollower } from "../../../../src/services/edge/follower";
import { systemClock } from "../../../../src/domain/clock";

let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await createHarness();
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-edge-resume-"));
});
afterAll(async () => {
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
