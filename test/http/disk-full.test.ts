// A full disk under the data directory (issue 18): the server runs on a small tmpfs this test mounts for itself
// (root only; skipped elsewhere unless ABUSE_INTEL_FIREWALL_TESTS=required, as CI sets it). Filled up, reports
// answer 503 (not 500) and store nothing; every acknowledged report is there after a restart; once space
// returns, reports are taken again without a restart.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, openSync, closeSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { FIREWALL_TESTS_REQUIRED } from "../support/netns";

const mountPoint = mkdtempSync(join(tmpdir(), "abuse-intel-full-"));
const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=6m", "tmpfs", mountPoint]).status === 0;
if (!mounted) {
  if (FIREWALL_TESTS_REQUIRED) throw new Error("cannot mount a tmpfs for the disk-full test (needs root)");
  console.warn("disk-full test skipped: cannot mount a tmpfs here (needs root)");
}

let h: Harness;
let reporters: TestUser[] = [];
beforeAll(async () => {
  if (!mounted) return;
  h = await createHarness({}, { dataDir: join(mountPoint, "data"), ownsDataDir: false });
  for (let i = 0; i < 4; i++) reporters.push(await addUser(h, { tier: "enterprise" }));
});
afterAll(async () => {
  if (mounted) {
    await h?.close().catch(() => undefined);
    spawnSync("umount", ["-l", mountPoint]);
  }
  rmSync(mountPoint, { recursive: true, force: true });
});

/** Fills the filesystem to the last byte with a filler file; returns its path. */
function fill(): string {
  const path = join(mountPoint, "filler");
  const fd = openSync(path, "w");
  const block = new Uint8Array(64 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch {
    // ENOSPC: full.
  } finally {
    closeSync(fd);
  }
  return path;
}

const report = (i: number) =>
  h.call("POST", "/v1/ip/report", {
    headers: reporters[i % reporters.length].jwt,
    json: { ip: `198.18.${(i >> 8) & 255}.${i & 255}`, category: "SSH", severity: 3, description: "x".repeat(900) },
  });

test.skipIf(!mounted)("reports on a full disk: 503 with the contract's body, nothing lost, taken again once space returns", async () => {
  let acknowledged = 0;
  let i = 0;
  for (; i < 50; i++) expect((await report(i)).status).toBe(201), acknowledged++;
  const filler = fill();
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
  rmSync(filler);
  const after = await report(i++);
  expect(after.status).toBe(201);
  acknowledged++;
  // Every acknowledged report is stored, and nothing else: after a restart, count them.
  h = await h.reopen();
  const stored = h.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM reports").get()!.n;
  expect(stored).toBe(acknowledged);
});
