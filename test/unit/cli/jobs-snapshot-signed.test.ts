// `abuse-intel jobs run snapshot` on a primary that signs its snapshots (`serve --sign-key`): the CLI takes
// --sign-key as serve does, and an unsigned file made without it is not what the signing server publishes at
// GET /v1/snapshots/latest (it serves its newest signed one): edges checking signatures would refuse it for good.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addUser, type TestUser } from "../../support/accounts";
import { createHarness, type Harness } from "../../support/harness";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
let dir: string;
let h: Harness;
let admin: TestUser;

async function cli(args: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_SIGN_KEY: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "review-jobs-snap-"));
  const keygen = await cli(["snapshot", "keygen", "--out", join(dir, "primary")]);
  expect(keygen.code).toBe(0);
  // The primary, as `serve --sign-key primary.key` runs it (the listener production serves with).
  h = await createHarness({ signKey: join(dir, "primary.key") });
  // A time before the real clock's, so the CLI's file (named by the real time) is the newer one.
  h.clock.set("2020-01-01T03:00:00.000Z");
  admin = await addUser(h, { role: "admin", tier: "enterprise" });
});
afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

const latestSigned = async () => {
  const res = await h.call("HEAD", "/v1/snapshots/latest", { headers: admin.apiKey });
  expect(res.status).toBe(200);
  return res.headers.get("x-snapshot-signed");
};

test("jobs run snapshot on a signing primary: accepts --sign-key like serve, and what it writes stays signed at /v1/snapshots/latest", async () => {
  // The server's own run signs.
  const run = await h.call("POST", "/v1/admin/jobs/snapshot/run", { headers: admin.jwt });
  expect(run.status).toBe(200);
  expect(await latestSigned()).toBe("true");

  // The operator runs the same job from the command line with the same key, as documented for serve.
  const withKey = await cli(["jobs", "run", "snapshot", "--data-dir", h.dataDir, "--sign-key", join(dir, "primary.key")]);
  // Observed: exit 2, "abuse-intel jobs: unknown option --sign-key".
  expect({ code: withKey.code, stderr: withKey.stderr }).toEqual({ code: 0, stderr: "" });
}, 60_000);

test("jobs run snapshot without a key does not publish an unsigned snapshot in place of the primary's signed one", async () => {
  const before = readdirSync(join(h.dataDir, "snapshots")).filter((n) => n.endsWith(".sqlite"));
  const plain = await cli(["jobs", "run", "snapshot", "--data-dir", h.dataDir]);
  expect(plain.code).toBe(0);
  const after = readdirSync(join(h.dataDir, "snapshots")).filter((n) => n.endsWith(".sqlite"));
  expect(after.length).toBe(before.length + 1);
  // Observed: "false": the newest file is the CLI's unsigned one, and edges with --pubkey refuse it for good.
  expect(await latestSigned()).toBe("true");
}, 60_000);
