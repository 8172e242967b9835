// Review (intake): reports arriving at `serve` while `abuse-intel import reports` (another process) holds the
// write lock for its whole run. Each report must wait and be committed after the import (201 and stored), with
// its credit and its event, and the import must be stored whole.

import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_EMAIL, MAIN, login, startServe, stop, type ServeProcess } from "./intake-support";

const dir = mkdtempSync(join(tmpdir(), "abuse-intel-review-import-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("reports sent during a CLI import all wait, then commit: 201, stored, credited, announced", async () => {
  const dataDir = join(dir, "data");
  const rows = 500_000;
  const date = new Date(Date.now() - 3 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, "Z");
  const lines = ["IP,Categories,ReportDate,Comment"];
  for (let i = 0; i < rows; i++) lines.push(`100.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255},18,${date},c`);
  const csv = join(dir, "import.csv");
  writeFileSync(csv, lines.join("\n") + "\n");

  let server: ServeProcess | null = null;
  let importer: ReturnType<typeof Bun.spawn> | null = null;
  try {
    server = await startServe(dataDir);
    const token = await login(server.url);
    importer = Bun.spawn([process.execPath, MAIN, "import", "reports", csv, "--reporter", ADMIN_EMAIL, "--data-dir", dataDir], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
    const importDone = importer.exited;
    let finished = false;
    importDone.then(() => (finished = true));
    const sent: Promise<{ ip: string; status: number; ms: number }>[] = [];
    let n = 0;
    // Reports all through the import (about its own addresses too), one every 20 ms.
    while (!finished && n < 400) {
      const ip = n % 2 === 0 ? `198.51.100.${n % 250}` : `100.0.${(n >> 8) & 255}.${n & 255}`;
      const t0 = performance.now();
      sent.push(
        fetch(`${server.url}/v1/ip/report`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ ip, category: "SSH", severity: 3 }) }).then(async (r) => {
          await r.arrayBuffer();
          return { ip, status: r.status, ms: performance.now() - t0 };
        }),
      );
      n++;
      await Bun.sleep(20);
    }
    expect(await importDone).toBe(0);
    const outcomes = await Promise.all(sent);
    const statuses: Record<number, number> = {};
    for (const o of outcomes) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
    expect(statuses).toEqual({ 201: outcomes.length });
    expect(outcomes.length).toBeGreaterThan(20);
    const db = new Database(join(dataDir, "abuse-intel.db"), { readonly: true });
    const live = (db.query("SELECT count(*) AS n FROM reports WHERE source = 'api'").get() as { n: number }).n;
    const imported = (db.query("SELECT count(*) AS n FROM reports WHERE source = 'import'").get() as { n: number }).n;
    const ledger = (db.query("SELECT count(*) AS n FROM credit_ledger WHERE reason = 'report_accepted'").get() as { n: number }).n;
    db.close();
    expect({ live, imported, ledger }).toEqual({ live: outcomes.length, imported: rows, ledger: outcomes.length });
    // The server's lookups see both: an imported address also reported live has 2 reports.
    const res = await fetch(`${server.url}/v1/ip/100.0.0.1`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await res.json()) as { reports: number }).reports).toBe(2);
  } finally {
    importer?.kill("SIGKILL");
    await importer?.exited;
    await stop(server);
  }
}, 30_000);
