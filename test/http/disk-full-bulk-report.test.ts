// A bulk-report (POST /api/v2/bulk-report) that the disk fills up in the middle of, on a small tmpfs of its own
// (see ../support/small-disk.ts). Its rows are written in several group-commit batches, so the first ones can be
// committed when a later one cannot: the answer is then 200 counting exactly the rows stored (with their credits
// and webhook events), and lists each row that was not, so the client can send those again. Before, it answered
// 503 "nothing was stored" with hundreds of rows committed, credited and announced. Only when no row went in is
// the answer the 503 itself.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { mountSmallDisk } from "../support/small-disk";

const disk = mountSmallDisk("12m", "the bulk-report disk-full test");

let h: Harness;
let reporter: TestUser;
beforeAll(async () => {
  if (!disk.mounted) return;
  h = await createHarness({}, { dataDir: join(disk.path, "data"), ownsDataDir: false });
  reporter = await addUser(h, { tier: "enterprise" });
});
afterAll(async () => {
  if (disk.mounted) await h?.close().catch(() => undefined);
  disk.unmount();
});

const count = (sql: string, ...args: (string | number)[]) => (h.store.sqlite.query(sql).get(...args) as { n: number }).n;

type BulkAnswer = { data: { savedReports: number; invalidReports: { error: string; input: string; rowNumber: number }[] } };

function bulkReport(rows: string[]): Promise<Response> {
  const body = new FormData();
  body.append("csv", new Blob([["IP,Categories,ReportDate,Comment", ...rows].join("\n")], { type: "text/csv" }), "report.csv");
  return fetch(`${h.url}/api/v2/bulk-report`, { method: "POST", body, headers: { Key: reporter.key } });
}

test.skipIf(!disk.mounted)("a bulk-report cut short by a full disk: 200 counting exactly the rows stored, the others listed", async () => {
  const rows = Array.from({ length: 3_000 }, (_, i) => `198.18.${i >> 8}.${i & 255},18,,${"x".repeat(1_000)}`);
  // Room for a batch or two of these rows, not for all of them.
  disk.fill(1_200 * 1024);
  const res = await bulkReport(rows);
  const stored = count("SELECT count(*) AS n FROM reports WHERE reporter_id = ?", reporter.user.id);
  expect(stored).toBeGreaterThan(0);
  expect(stored).toBeLessThan(rows.length);
  expect(res.status).toBe(200);
  const { savedReports, invalidReports } = ((await res.json()) as BulkAnswer).data;
  expect({ savedReports, credits: count("SELECT coalesce(sum(delta), 0) AS n FROM credit_ledger WHERE user_id = ?", reporter.user.id), events: count("SELECT count(*) AS n FROM outbox WHERE event = 'ip.reported'") }).toEqual({
    savedReports: stored,
    credits: stored,
    events: stored,
  });
  // Each row not stored is listed, by its line in the file (the header is line 1), and why.
  expect(invalidReports.length).toBe(rows.length - stored);
  expect(new Set(invalidReports.map((r) => r.error))).toEqual(new Set(["Not Saved: Disk Full"]));
  const storedIps = new Set((h.store.sqlite.query("SELECT ip FROM reports").all() as { ip: string }[]).map((r) => r.ip));
  expect(invalidReports.filter((r) => storedIps.has(r.input) || rows[r.rowNumber - 2]!.split(",")[0] !== r.input)).toEqual([]);

  // With no room at all, nothing goes in: then the answer is the 503, and it is true.
  disk.fill();
  const none = await bulkReport(invalidReports.map((r) => rows[r.rowNumber - 2]!));
  expect(none.status).toBe(503);
  expect(((await none.json()) as { errors: { detail: string }[] }).errors[0]!.detail).toContain("nothing was stored");
  expect(count("SELECT count(*) AS n FROM reports")).toBe(stored);

  // Space returns: the rows listed, sent again, all go in.
  disk.free();
  const again = await bulkReport(invalidReports.map((r) => rows[r.rowNumber - 2]!));
  expect(((await again.json()) as BulkAnswer).data).toEqual({ savedReports: rows.length - stored, invalidReports: [] });
  expect(count("SELECT count(*) AS n FROM reports")).toBe(rows.length);
}, 20_000);
