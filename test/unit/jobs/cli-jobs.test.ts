// `abuse-intel jobs list|run` as an operator runs them: the real entry point in a child process on a data
// directory, checked through the same store the server would open.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config";
import { systemClock } from "../../../src/domain/clock";
import { parseReportInput } from "../../../src/domain/report-input";
import { createServices } from "../../../src/app/create-services";
import { openStore } from "../../../src/store/database";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
let dataDir: string;

async function cli(args: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, ABUSE_INTEL_DATA_DIR: dataDir },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

function query<T>(sql: string): T[] {
  const store = openStore(dataDir);
  try {
    return store.sqlite.query(sql).all() as T[];
  } finally {
    store.close();
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-cli-jobs-"));
  // Three reporters of one address and category, and a webhook subscription, written as a server would.
  const store = openStore(dataDir);
  const services = await createServices({ config: { ...defaultConfig(), dataDir }, clock: systemClock, store, webhookDispatcher: { autoStart: false } });
  const ids: number[] = [];
  for (let i = 0; i < 3; i++) ids.push(services.accounts.insert({ email: `r${i}@example.test`, tier: "free", role: "user", dailyLimit: null }, "x").id);
  for (const id of ids) await services.reports.submit(id, parseReportInput({ ip: "203.0.113.7", category: "ssh" }));
  services.webhooks.create(ids[0], { url: "http://127.0.0.1:9/hook", events: ["ip.verified"], secret: null });
  await services.stop();
  store.close();
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe("abuse-intel jobs", () => {
  test("run NAME runs the job in this process and prints what it did; its events wait for the server to deliver", async () => {
    const { stdout, code } = await cli(["jobs", "run", "verify", "--json"]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ name: "verify", lastError: null, lastResult: { groups: 1, verified: 3 } });
    expect(query<{ status: string }>("SELECT status FROM reports").map((r) => r.status)).toEqual(["verified", "verified", "verified"]);
    expect(query("SELECT event FROM outbox WHERE event = 'ip.verified'")).toEqual([{ event: "ip.verified" }, { event: "ip.verified" }, { event: "ip.verified" }]);
    // The CLI never delivers: no delivery was even created.
    expect(query("SELECT id FROM webhook_deliveries")).toEqual([]);

    const plain = await cli(["jobs", "run", "verify"]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^verify: done in \d+ ms: \{"groups":0,"verified":0\}\n$/);
  }, 180_000); // CLI processes: each starts Bun and opens the data directory

  test("a failed run exits 1 with the error; an unknown job exits 2", async () => {
    // A file where the snapshot directory should be: the export cannot write.
    writeFileSync(join(dataDir, "snapshots"), "not a directory");
    const failed = await cli(["jobs", "run", "snapshot"]);
    rmSync(join(dataDir, "snapshots"));
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^abuse-intel jobs run: snapshot failed: .+/m);
    const done = await cli(["jobs", "run", "snapshot"]);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^snapshot: done in \d+ ms: .*"file":".*snapshots\/abuse-intel-\d{8}T\d{6}(\d{3})?Z\.sqlite"/);
    const unknown = await cli(["jobs", "run", "reindex"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('No job named "reindex"');
    expect((await cli(["jobs", "run"])).code).toBe(2);
  }, 180_000);

  test("list shows every job with its last run", async () => {
    const { stdout, code } = await cli(["jobs", "list", "--json", "--schedule", "expire=30 * * * *"]);
    expect(code).toBe(0);
    const jobs = JSON.parse(stdout);
    expect(jobs.map((j: { name: string; schedule: string }) => [j.name, j.schedule])).toEqual([
      ["rescore", "*/10 * * * *"],
      ["verify", "* * * * *"],
      ["detect-threats", "* * * * *"],
      ["expire", "30 * * * *"],
      ["snapshot", "0 3 * * *"],
    ]);
    expect(jobs[1].lastRunAt).not.toBeNull();
    expect(jobs[0].lastRunAt).toBeNull();
    const table = await cli(["jobs", "list"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+SCHEDULE\s+LAST RUN\s+DURATION\s+NEXT RUN\s+LAST ERROR$/);
  }, 180_000);
});
