// The blocklist ETag against CLI commands run on a running server's data directory (contract 5.10: a strong ETag;
// If-None-Match with the current one gives 304). Another process's commit of anything made the server reload the
// allowlist, which announced a change every time and moved every list's ETag: firewalls polling with the tag
// downloaded whole unchanged lists again after a `user add`, and even after a read-only `check`.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cleanUp, cli, type Server, startServe, tempDir } from "../../support/cli-process";

let dataDir: string;
let server: Server;
let key: string;
const env = () => ({ ABUSE_INTEL_DATA_DIR: dataDir });

beforeAll(async () => {
  dataDir = tempDir();
  expect((await cli(["user", "add", "--email", "ops@example.com", "--tier", "enterprise"], { env: env() })).code).toBe(0);
  const made = await cli(["key", "create", "--email", "ops@example.com", "--name", "firewall"], { env: env() });
  expect(made.code).toBe(0);
  key = made.stdout.trim();
  expect((await cli(["import", "blocklist", "-", "--source", "drop", "--category", "SPAM", "--severity", "5"], { env: env(), stdin: "192.0.2.0/24\n198.51.100.7\n2001:db8::/48\n" })).code).toBe(0);
  server = await startServe(["--data-dir", dataDir, "--admin-password", "admin password 123"]);
}, 30_000);

afterAll(async () => {
  await server?.stop();
  cleanUp();
});

async function etagOf(format: string): Promise<{ etag: string; body: string }> {
  const res = await fetch(`${server.url}/v1/ip/blocklist?format=${format}`, { headers: { "x-api-key": key } });
  expect(res.status).toBe(200);
  return { etag: res.headers.get("etag") as string, body: await res.text() };
}

async function revalidate(format: string, etag: string): Promise<{ status: number; etag: string | null; body: string }> {
  const res = await fetch(`${server.url}/v1/ip/blocklist?format=${format}`, { headers: { "x-api-key": key, "if-none-match": etag } });
  return { status: res.status, etag: res.headers.get("etag"), body: await res.text() };
}

describe("the ETag of an unchanged list", () => {
  test("stays when an unrelated CLI command writes to the data directory (user add)", async () => {
    const before = await etagOf("txt");
    expect(before.body).toBe("192.0.2.0/24\n198.51.100.7\n2001:db8::/48\n");
    expect((await cli(["user", "add", "--email", "someone@example.com", "--tier", "free"], { env: env() })).code).toBe(0);
    await Bun.sleep(2_500); // the server follows other processes' commits within 2 s
    const after = await revalidate("txt", before.etag);
    // Observed: 200 with a new ETag and the same body: the server's reaction to another process's commit
    // reloads the allowlist, and AllowlistService.reload() always notifies (index.touch(), blocklist counter).
    expect({ status: after.status, etag: after.etag }).toEqual({ status: 304, etag: before.etag });
  }, 20_000);

  test("stays when a read-only CLI command looks at the data directory (check)", async () => {
    const before = await etagOf("nft");
    expect((await cli(["check", "198.51.100.7"], { env: env() })).code).toBe(0);
    await Bun.sleep(2_500);
    const after = await revalidate("nft", before.etag);
    expect({ status: after.status, etag: after.etag }).toEqual({ status: 304, etag: before.etag });
  }, 20_000);
});
