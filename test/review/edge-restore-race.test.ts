// Review (backup/restore): `restore` checks that no server runs on the data directory once, at its start, and
// never claims the directory itself. A server started while a restore is under way (a service manager restarting
// it, a second operator) opens the old database; the restore then renames that database (with its -wal and -shm)
// away under it, and every report the server acknowledges from then on goes into the renamed file: after the
// next restart they are gone. The restore is held still (SIGSTOP) while it copies the backup, as a large backup
// on a slow disk holds it, so the interleaving is certain rather than a matter of timing.

import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stampChecksum } from "../../src/store/backup";
import { addUser, TEST_PASSWORD } from "../support/accounts";
import { createHarness } from "../support/harness";
import { MAIN } from "./edge-support";

const dir = mkdtempSync(join(tmpdir(), "review restore race "));
const spawned: ReturnType<typeof Bun.spawn>[] = [];
afterAll(async () => {
  for (const p of spawned) {
    if (p.exitCode === null) {
      p.kill("SIGCONT");
      p.kill("SIGKILL");
    }
    await p.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

const env = { ...process.env, ABUSE_INTEL_DATA_DIR: "", ABUSE_INTEL_JWT_SECRET: "review-secret-review-secret-review-0123" };

test("a server started while a restore runs is refused, or the restore does not replace its database", async () => {
  const dataDir = join(dir, "data");
  const h = await createHarness({}, { dataDir, ownsDataDir: false });
  await addUser(h, { email: "op@example.test", tier: "enterprise" });
  await h.close();

  // A backup, made larger (200 MiB of padding, checksum stamped again) so its copy lasts long enough to be caught.
  const backup = join(dir, "backup.sqlite");
  const made = Bun.spawnSync([process.execPath, MAIN, "backup", "--out", backup, "--data-dir", dataDir], { env });
  expect(made.exitCode).toBe(0);
  const db = new Database(backup, { readwrite: true });
  db.exec("CREATE TABLE padding (b BLOB)");
  const insert = db.prepare("INSERT INTO padding VALUES (zeroblob(1048576))");
  db.transaction(() => {
    for (let i = 0; i < 200; i++) insert.run();
  })();
  db.close();
  stampChecksum(backup);

  // The restore passes its check (no server), starts copying the backup in, and is held there.
  const restore = Bun.spawn([process.execPath, MAIN, "restore", backup, "--data-dir", dataDir], { env, stdout: "pipe", stderr: "pipe" });
  spawned.push(restore);
  const copying = join(dataDir, "abuse-intel.db.restoring");
  const deadline = Date.now() + 10_000;
  while (!existsSync(copying) && restore.exitCode === null && Date.now() < deadline) await Bun.sleep(1);
  expect(existsSync(copying)).toBe(true);
  restore.kill("SIGSTOP");

  // Meanwhile a server is started on the directory.
  const serve = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir], { env, stdout: "pipe", stderr: "pipe" });
  spawned.push(serve);
  let out = "";
  void (async () => {
    for await (const c of serve.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(c);
  })();
  const until = Date.now() + 15_000;
  while (!/listening on /.test(out) && serve.exitCode === null && Date.now() < until) await Bun.sleep(50);
  const serverStarted = /listening on /.test(out);
  let lost = 0;
  if (serverStarted) {
    const url = /listening on (http:\/\/[^\s]+)/.exec(out)![1];
    restore.kill("SIGCONT");
    const restoreCode = await restore.exited;
    // The server goes on taking reports after the restore "succeeded".
    const login = await fetch(`${url}/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "op@example.test", password: TEST_PASSWORD }) });
    const token = ((await login.json()) as { data: { accessToken: string } }).data.accessToken;
    const report = await fetch(`${url}/v1/ip/report`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ ip: "203.0.113.9", category: "ssh", severity: 5 }) });
    const acknowledged = report.status === 201;
    serve.kill("SIGTERM");
    await serve.exited;
    // What the data directory holds now, as the next server start will see it.
    const after = new Database(join(dataDir, "abuse-intel.db"), { readonly: true });
    const stored = (after.query("SELECT count(*) AS n FROM reports WHERE ip = '203.0.113.9'").get() as { n: number }).n;
    after.close();
    // Where it went: the database the restore renamed away.
    const keptName = readdirSync(dataDir).find((n) => /^abuse-intel\.db\.before-restore-[0-9TZ]+$/.test(n));
    let inRenamedAway = 0;
    if (keptName !== undefined) {
      const kept = new Database(join(dataDir, keptName), { readonly: true });
      inRenamedAway = (kept.query("SELECT count(*) AS n FROM reports WHERE ip = '203.0.113.9'").get() as { n: number }).n;
      kept.close();
    }
    lost = acknowledged && stored === 0 ? 1 : 0;
    expect({ restoreCode, acknowledged, stored, inRenamedAway }).toEqual({ restoreCode, acknowledged: true, stored: 1, inRenamedAway: 0 });
  } else {
    restore.kill("SIGCONT");
    await restore.exited;
  }
  expect(lost).toBe(0);
}, 30_000);
