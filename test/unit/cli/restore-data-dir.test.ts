// `restore` holds the data directory for as long as it runs, as a server does (the real CLI, in its own
// processes): a server started meanwhile (a service manager restarting it, a second operator) is refused, instead
// of opening the database the restore then renames away under it, which would lose every report it acknowledged
// from then on. The restore is held still (SIGSTOP) while it runs, as a large backup on a slow disk holds it, so
// the interleaving is certain rather than a matter of timing.

import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stampChecksum } from "../../../src/store/backup";
import { addUser } from "../../support/accounts";
import { createHarness } from "../../support/harness";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const dir = mkdtempSync(join(tmpdir(), "abuse-intel-restore-dir-"));
const env = { ...process.env, ABUSE_INTEL_DATA_DIR: "", ABUSE_INTEL_JWT_SECRET: "restore-secret-restore-secret-0123456789" };
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

test("a server started while a restore runs is refused, and the directory is free once the restore is done", async () => {
  const dataDir = join(dir, "data");
  const h = await createHarness({}, { dataDir, ownsDataDir: false });
  await addUser(h, { email: "op@example.test", tier: "enterprise" });
  await h.close();
  // A backup made larger (48 MiB of padding, its checksum stamped again), so the restore lasts long enough to be
  // caught holding the directory.
  const backup = join(dir, "backup.sqlite");
  expect(Bun.spawnSync([process.execPath, MAIN, "backup", "--out", backup, "--data-dir", dataDir], { env }).exitCode).toBe(0);
  const db = new Database(backup, { readwrite: true });
  db.exec("CREATE TABLE padding (b BLOB)");
  const insert = db.prepare("INSERT INTO padding VALUES (zeroblob(1048576))");
  db.transaction(() => {
    for (let i = 0; i < 48; i++) insert.run();
  })();
  db.close();
  stampChecksum(backup);

  const restore = Bun.spawn([process.execPath, MAIN, "restore", backup, "--data-dir", dataDir], { env, stdout: "pipe", stderr: "pipe" });
  spawned.push(restore);
  const pidFile = join(dataDir, "serve.pid");
  const holds = () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() === `${restore.pid} restore`;
  const deadline = Date.now() + 60_000;
  while (!holds() && restore.exitCode === null && Date.now() < deadline) await Bun.sleep(1);
  restore.kill("SIGSTOP");
  expect({ holds: holds(), exitCode: restore.exitCode }).toEqual({ holds: true, exitCode: null });

  const serve = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir], { env, stdout: "pipe", stderr: "pipe" });
  spawned.push(serve);
  const timer = setTimeout(() => serve.kill("SIGKILL"), 15_000);
  const [serveError, serveCode] = await Promise.all([new Response(serve.stderr).text(), serve.exited]);
  clearTimeout(timer);
  expect({ serveCode, said: serveError.includes(`a restore (pid ${restore.pid}) is running on ${dataDir}`) }).toEqual({ serveCode: 2, said: true });

  restore.kill("SIGCONT");
  const [restoreOutput, restoreCode] = await Promise.all([new Response(restore.stdout).text(), restore.exited]);
  expect({ restoreCode, restoreOutput }).toMatchObject({ restoreCode: 0, restoreOutput: expect.stringContaining("restored") });
  expect(existsSync(pidFile)).toBe(false);
}, 30_000);
