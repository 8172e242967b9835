// A full disk under the data directory (issue 18): the server runs on a small tmpfs this test mounts for itself
// (root only; skipped elsewhere unless ABUSE_INTEL_FIREWALL_TESTS=required, as CI sets it). Filled up, reports
// answer 503 (not 500) and store nothing; every acknowledged report is there after a restart; once space
// returns, reports are taken again without a restart.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { mountSmallDisk } from "../support/small-disk";

const disk = mountSmallDisk("6m", "the disk-full test");

let h: Harness;
let reporters: TestUser[] = [];
beforeAll(async () => {
  if (!disk.mounted) return;
  h = await createHarness({}, { dataDir: join(disk.path, "data"), ownsDataDir: false });
  for (let i = 0; i < 4; i++) reporters.push(await addUser(h, { tier: "enterprise" }));
});
afterAll(async () => {
  if (disk.mounted) await h?.close().catch(() => undefined);
  disk.unmount();
});

const report = (i: number) =>
  h.call("POST", "/v1/ip/report", {
    headers: reporters[i % reporters.length].jwt,
    json: { ip: `198.18.${(i >> 8) & 255}.${i & 255}`, category: "SSH", severity: 3, description: "x".repeat(900) },
  });

test.skipIf(!disk.mounted)("reports on a full disk: 503 with the contract's body, nothing lost, taken again once space returns", async () => {
  let acknowledged = 0;
  let i = 0;
  for (; i < 50; i++) expect((await report(i)).status).toBe(201), acknowledged++;
  disk.fill();
  let refused: Response | null = null;
  for (; i < 20000 && refused === null; i++) {
    const res = await report(i);
    if (res.status === 201) acknowledged++;
    else refused = res;
  }
  expect(refused).not.toBeNull();
  expect(refused!.status).toBe(503);
  const body = (await refused!.json()) as { success: boolean; code: string; error: string };
  expect(body).toMatchObject({ success: false, code: "busy" });
  expect(body.error).toContain("disk");
  // Space returns: the next report is taken, without a restart.
  disk.free();
  const after = await report(i++);
  expect(after.status).toBe(201);
  acknowledged++;
  // Every acknowledged report is stored, and nothing else: after a restart, count them.
  h = await h.reopen();
  const stored = h.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM reports").get()!.n;
  expect(stored).toBe(acknowledged);
});
