// `serve --snapshot FILE` checks the whole file before it serves anything of it, as an edge checks what it pulls:
// a snapshot whose content no longer matches its hash (here its pre-built score index zeroed on disk, the SQLite
// structure intact) is refused, and so is, with --pubkey, one that key did not sign. Through the real CLI.

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportSnapshot } from "../../../src/services/snapshots/export";
import { writeKeyPair } from "../../../src/services/snapshots/signing";
import { addUser } from "../../support/accounts";
import { createHarness } from "../../support/harness";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const dir = mkdtempSync(join(tmpdir(), "abuse-intel-serve-snapshot-"));
const signed = join(dir, "signed.sqlite");
const keys = { ours: join(dir, "ours"), theirs: join(dir, "theirs") };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  const h = await createHarness();
  const u = await addUser(h, { tier: "enterprise" });
  for (let i = 1; i <= 5; i++) expect((await h.call("POST", "/v1/ip/report", { headers: u.jwt, json: { ip: `198.51.100.${i}`, category: "ssh", severity: 5 } })).status).toBe(201);
  writeKeyPair(keys.ours);
  writeKeyPair(keys.theirs);
  await exportSnapshot({ store: h.store, services: h.services, out: signed, signKey: `${keys.ours}.key`, nowMs: h.clock.now() });
  await h.close();
});

/** Runs `serve` with `args` to its end (a refused start): its exit code and stderr. */
async function serve(args: string[]): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stderr };
}

/** Whether `serve` with `args` gets as far as listening (then it is stopped). */
async function startsServing(args: string[]): Promise<boolean> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
  const reader = proc.stdout.getReader();
  let out = "";
  try {
    while (!out.includes("listening on")) {
      const { value, done } = await reader.read();
      if (done) return false;
      out += new TextDecoder().decode(value);
    }
    return true;
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

test("a sound snapshot is served, with the key that signed it too", async () => {
  expect(await startsServing(["--snapshot", signed, "--api-key", "k"])).toBe(true);
  expect(await startsServing(["--snapshot", signed, "--api-key", "k", "--pubkey", `${keys.ours}.pub`])).toBe(true);
});

test("another key's snapshot is refused when --pubkey is given", async () => {
  const res = await serve(["--snapshot", signed, "--api-key", "k", "--pubkey", `${keys.theirs}.pub`]);
  expect(res.code).toBe(2);
  expect(res.stderr).toContain("is not served: the signature does not match the public key");
});

test("a snapshot whose content no longer matches its hash is refused", async () => {
  const tampered = join(dir, "tampered.sqlite");
  copyFileSync(signed, tampered);
  const db = new Database(tampered, { readonly: true });
  const score = db.query("SELECT bytes FROM index_data WHERE name = 'score'").get() as { bytes: Uint8Array };
  db.close();
  const bytes = readFileSync(tampered);
  const at = bytes.indexOf(Buffer.from(score.bytes));
  expect(at).toBeGreaterThan(0);
  bytes.fill(0, at, at + score.bytes.length);
  writeFileSync(tampered, bytes);
  const res = await serve(["--snapshot", tampered, "--api-key", "k"]);
  expect(res.code).toBe(2);
  expect(res.stderr).toContain("is not served: the content does not match its hash");
  expect(res.stderr).not.toContain("    at ");
});
