// `abuse-intel backup` and `restore` (contract section 16), each the real CLI in its own process: a backup taken
// while reports keep arriving restores into a new data directory whose server has every report acknowledged
// before the backup began and the same accounts (login works); a truncated, bit-flipped or newer backup is
// refused and nothing changes (a bit flipped inside a row too: the backup's checksum; not even a directory it would
// have made); a running server blocks a restore.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stampChecksum } from "../../../src/store/backup";
import { addUser, TEST_PASSWORD, type TestUser } from "../../support/accounts";
import { createHarness, type Harness } from "../../support/harness";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
let dir: string;
let h: Harness;
let reporter: TestUser;

async function cli(args: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}
const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-backup-"));
  h = await createHarness({}, { dataDir: join(dir, "primary"), ownsDataDir: false });
  reporter = await addUser(h, { tier: "enterprise", email: "reporter@example.test" });
});
afterAll(async () => {
  await h.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe("backup under a steady stream of reports, then restore", () => {
  test("every report acknowledged before the backup began is restored, and the accounts log in", async () => {
    const acknowledged: string[] = [];
    let stop = false;
    let i = 0;
    const stream = (async () => {
      while (!stop) {
        const n = i++;
        const res = await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ip: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`, category: "SSH" } });
        if (res.status === 201) acknowledged.push(((await res.json()) as { reportId: string }).reportId);
      }
    })();
    while (acknowledged.length < 200) await Bun.sleep(5);
    const before = [...acknowledged];
    const backup = join(dir, "backup.sqlite");
    const made = await cli(["backup", "--out", backup, "--data-dir", h.dataDir]);
    await Bun.sleep(50);
    stop = true;
    await stream;
    expect(made.code).toBe(0);
    expect(made.stdout).toContain(`backup written to ${backup}`);
    expect(statSync(backup).mode & 0o777).toBe(0o600);
    expect(acknowledged.length).toBeGreaterThan(before.length); // reports kept arriving while it ran

    const target = join(dir, "restored");
    const restored = await cli(["restore", backup, "--data-dir", target]);
    expect(restored.code).toBe(0);
    const r = await createHarness({}, { dataDir: target, ownsDataDir: false });
    try {
      const ids = new Set(r.store.sqlite.query<{ id: number }, []>("SELECT id FROM reports").all().map((x) => String(x.id)));
      expect(before.filter((id) => !ids.has(id))).toEqual([]);
      const login = await r.call("POST", "/v1/auth/login", { json: { email: "reporter@example.test", password: TEST_PASSWORD } });
      expect(login.status).toBe(200);
      expect(r.store.sqlite.query("SELECT name FROM sqlite_master WHERE name = 'abuse_intel_backup_files'").get()).toBeNull();
    } finally {
      await r.close();
    }
  }, 60_000);
});

describe("refusals change nothing", () => {
  let good: string;
  let target: string;
  beforeAll(async () => {
    good = join(dir, "good.sqlite");
    expect((await cli(["backup", "--out", good, "--data-dir", h.dataDir])).code).toBe(0);
    target = join(dir, "target");
    expect((await cli(["restore", good, "--data-dir", target])).code).toBe(0);
  });

  const attempt = async (file: string) => {
    const db = join(target, "abuse-intel.db");
    const before = sha(db);
    const res = await cli(["restore", file, "--data-dir", target]);
    expect(res.code).not.toBe(0);
    expect(sha(db)).toBe(before);
    expect(res.stderr).toContain("Nothing was changed");
    return res.stderr;
  };

  test("a truncated backup", async () => {
    const bad = join(dir, "truncated.sqlite");
    copyFileSync(good, bad);
    truncateSync(bad, Math.floor(statSync(bad).size / 2) + 17);
    expect(await attempt(bad)).toContain("damaged");
  });

  test("a bit-flipped backup", async () => {
    const bad = join(dir, "flipped.sqlite");
    const bytes = readFileSync(good);
    // Flip bits across the file's pages (after the header): the integrity check sees the damage.
    for (let at = 4096 + 100; at < bytes.length; at += 4096) bytes[at] ^= 0xff;
    writeFileSync(bad, bytes);
    expect(await attempt(bad)).toMatch(/damaged|cannot be read/);
  });

  test("a bit flipped inside a row, which SQLite's integrity check does not see, fails the backup's checksum", async () => {
    const bad = join(dir, "row-flipped.sqlite");
    const bytes = readFileSync(good);
    // The reporter's password hash, as stored: one bit of it changed.
    const db = new Database(good, { readonly: true });
    const { hash } = db.query("SELECT password_hash AS hash FROM users WHERE email = ?").get("reporter@example.test") as { hash: string };
    db.close();
    const at = bytes.indexOf(Buffer.from(hash));
    expect(at).toBeGreaterThan(100);
    bytes[at + 20] ^= 0x01;
    writeFileSync(bad, bytes);
    const check = new Database(bad, { readonly: true });
    expect(check.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    check.close();
    expect(await attempt(bad)).toContain("does not match the checksum written when it was made");
  });

  test("a backup made by a newer version", async () => {
    const newer = join(dir, "newer.sqlite");
    copyFileSync(good, newer);
    const db = new Database(newer);
    db.exec("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('a-schema-change-from-the-future', 1)");
    db.close();
    // As that version would have written it: with its checksum.
    stampChecksum(newer);
    expect(await attempt(newer)).toContain("newer version");
  });

  test("not a backup at all", async () => {
    const other = join(dir, "other.txt");
    writeFileSync(other, "hello");
    await attempt(other);
  });

  test("into a directory that does not exist: none is left behind", async () => {
    const other = join(dir, "other-bad.txt");
    writeFileSync(other, "hello");
    const nowhere = join(dir, "not-yet");
    const res = await cli(["restore", other, "--data-dir", nowhere]);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("Nothing was changed");
    expect(existsSync(nowhere)).toBe(false);
  });

  test("while a server runs on the data directory", async () => {
    // The pid file a running `serve` writes, naming a live process (this test's).
    writeFileSync(join(target, "serve.pid"), `${process.pid}\n`);
    try {
      const res = await cli(["restore", good, "--data-dir", target]);
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain("is running");
    } finally {
      rmSync(join(target, "serve.pid"));
    }
    expect(existsSync(join(target, "abuse-intel.db"))).toBe(true);
  });
});
