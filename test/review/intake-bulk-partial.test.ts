// Review (intake): POST /api/v2/bulk-report whose rows are written in several group-commit batches, when a later
// batch cannot be written (the disk under the data directory fills up). The answer must not say "nothing was
// stored" while the earlier batches' reports are committed, credited and announced: the client cannot tell
// which rows went in. Needs root (a small tmpfs, as test/http/disk-full.test.ts); skipped elsewhere.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

const mountPoint = mkdtempSync(join(tmpdir(), "abuse-intel-review-bulk-full-"));
const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=12m", "tmpfs", mountPoint]).status === 0;
if (!mounted) console.warn("skipped: cannot mount a tmpfs here (needs root)");

let h: Harness;
let reporter: TestUser;
beforeAll(async () => {
  if (!mounted) return;
  h = await createHarness({}, { dataDir: join(mountPoint, "data"), ownsDataDir: false });
  reporter = await addUser(h, { tier: "enterprise" });
});
afterAll(async () => {
  if (mounted) {
    await h?.close().catch(() => undefined);
    spawnSync("umount", ["-l", mountPoint]);
  }
  rmSync(mountPoint, { recursive: true, force: true });
});

/** Fills the filesystem, then frees `leaveBytes` of it again. */
function fillLeaving(leaveBytes: number): void {
  const path = join(mountPoint, "filler");
  const fd = openSync(path, "w");
  const block = new Uint8Array(16 * 1024);
  let written = 0;
  try {
    for (;;) written += writeSync(fd, block);
  } catch {
    // ENOSPC: full.
  } finally {
    closeSync(fd);
  }
  spawnSync("truncate", ["-s", String(Math.max(0, written - leaveBytes)), path]);
}

test.skipIf(!mounted)("a bulk-report cut short by a full disk: not 'nothing was stored' while some of its rows are committed", async () => {
  const rows = 3_000;
  const csv = ["IP,Categories,ReportDate,Comment"];
  for (let i = 0; i < rows; i++) csv.push(`198.18.${i >> 8}.${i & 255},18,2026-11-20T10:00:00Z,${"x".repeat(1_000)}`);
  fillLeaving(1_200 * 1024);
  const body = new FormData();
  body.append("csv", new Blob([csv.join("\n")], { type: "text/csv" }), "report.csv");
  const res = await fetch(`${h.url}/api/v2/bulk-report`, { method: "POST", body, headers: { Key: reporter.key } });
  const answer = await res.text();
  rmSync(join(mountPoint, "filler"));
  const stored = (h.store.sqlite.query("SELECT count(*) AS n FROM reports WHERE reporter_id = ?").get(reporter.user.id) as { n: number }).n;
  const credits = (h.store.sqlite.query("SELECT coalesce(sum(delta), 0) AS n FROM credit_ledger WHERE user_id = ?").get(reporter.user.id) as { n: number }).n;
  const events = (h.store.sqlite.query("SELECT count(*) AS n FROM outbox WHERE event = 'ip.reported'").get() as { n: number }).n;
  // The set-up worked: the disk filled before the end of the file.
  expect(stored).toBeLessThan(rows);
  // Either all or nothing (an error answer and no row stored), or a 200 whose savedReports counts what was stored.
  // Observed: 503 "The disk holding the data directory is full: nothing was stored" with 512 reports committed,
  // credited (+512) and announced (512 ip.reported events).
  const outcome = res.status === 200 ? { answered: 200, savedReports: JSON.parse(answer).data.savedReports } : { answered: res.status, savedReports: 0 };
  expect({ ...outcome, credits, events }).toEqual({ answered: outcome.answered, savedReports: stored, credits: stored, events: stored });
  if (res.status !== 200) expect(answer).not.toContain("nothing was stored");
}, 20_000);
