// Read-only edges following a primary (contract section 16), two executables on 127.0.0.1: a report on the
// primary reaches the edge after the next snapshot; with the primary stopped the edge keeps answering and says
// why its pulls fail; an edge given another public key never serves what it pulls; and the primary's
// GET /v1/snapshots/latest answers 304 to its ETag and resumes with Range.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createSandbox, parseFirstStartCredentials, runCli, type Sandbox } from "./support/binary";
import { bodyOf, type RunningServer, startServer } from "./support/server";

const EDGE_KEY = "edge-client-key-0123456789abcdef";
let primarySandbox: Sandbox;
let edgeSandbox: Sandbox;
let primary: RunningServer;
let edge: RunningServer;
let adminToken: string;
let adminKey: string;

async function waitFor<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(200);
  }
}

async function reportAndSnapshot(ip: string) {
  const auth = { authorization: `Bearer ${adminToken}` };
  const report = await primary.request("POST", "/v1/ip/report", { headers: auth, json: { ip, category: "ssh", severity: 5 } });
  expect(report.status).toBe(201);
  const run = await primary.request("POST", "/v1/admin/jobs/snapshot/run", { headers: auth });
  expect(run.status).toBe(200);
}

const edgeReputation = async (ip: string) => {
  const res = await edge.request("GET", `/v1/ip/${ip}/reputation`, { headers: { "x-api-key": EDGE_KEY } });
  return res.status === 200 ? ((await bodyOf(res)).data as { totalReports: number }) : null;
};

beforeAll(async () => {
  primarySandbox = createSandbox();
  edgeSandbox = createSandbox();
  expect((await runCli(primarySandbox, ["snapshot", "keygen", "--out", join(primarySandbox.dir, "primary")])).code).toBe(0);
  primary = await startServer(primarySandbox, { args: ["--sign-key", join(primarySandbox.dir, "primary.key")] });
  const creds = parseFirstStartCredentials(primary.output())!;
  adminToken = (await bodyOf(await primary.request("POST", "/v1/auth/login", { json: { email: creds.email, password: creds.password } }))).data.accessToken;
  adminKey = (await bodyOf(await primary.request("POST", "/v1/keys", { headers: { authorization: `Bearer ${adminToken}` }, json: { name: "edge" } }))).data.key;
}, 60_000);
afterAll(async () => {
  await edge?.stop("SIGKILL");
  await primary?.stop("SIGKILL");
  primarySandbox?.cleanup();
  edgeSandbox?.cleanup();
});

describe("an edge following its primary", () => {
  test("before the first snapshot the edge answers 503; after it, the primary's reports", async () => {
    edge = await startServer(edgeSandbox, {
      args: ["--follow", primary.url, "--follow-key", adminKey, "--pubkey", join(primarySandbox.dir, "primary.pub"), "--every", "1", "--api-key", EDGE_KEY],
      waitReady: false,
    });
    expect((await edge.request("GET", "/readyz")).status).toBe(503);
    expect((await edge.request("GET", "/v1/ip/198.51.100.1/reputation", { headers: { "x-api-key": EDGE_KEY } })).status).toBe(503);
    await reportAndSnapshot("198.51.100.1");
    const first = await waitFor("the first snapshot on the edge", () => edgeReputation("198.51.100.1"));
    expect(first.totalReports).toBe(1);
    const ready = await edge.request("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect((await bodyOf(ready)).edge).toMatchObject({ lastPullError: null });
    // Writes on an edge: 503 read_only.
    const write = await edge.request("POST", "/v1/ip/report", { headers: { "x-api-key": EDGE_KEY }, json: { ip: "192.0.2.1", category: "ssh" } });
    expect(write.status).toBe(503);
  }, 60_000);

  test("a report on the primary reaches the edge after the next snapshot", async () => {
    await reportAndSnapshot("198.51.100.2");
    const second = await waitFor("the second report on the edge", async () => ((await edgeReputation("198.51.100.2"))?.totalReports === 1 ? true : null));
    expect(second).toBe(true);
  }, 60_000);

  test("GET /v1/snapshots/latest: an admin's key, 304 to its ETag, 206 to a Range; others 403", async () => {
    const key = { "x-api-key": adminKey };
    const whole = await primary.request("GET", "/v1/snapshots/latest", { headers: key });
    expect(whole.status).toBe(200);
    const etag = whole.headers.get("etag")!;
    const bytes = new Uint8Array(await whole.arrayBuffer());
    expect(whole.headers.get("x-snapshot-signed")).toBe("true");
    expect((await primary.request("GET", "/v1/snapshots/latest", { headers: { ...key, "if-none-match": etag } })).status).toBe(304);
    const part = await primary.request("GET", "/v1/snapshots/latest", { headers: { ...key, range: "bytes=100-", "if-range": etag } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 100-${bytes.length - 1}/${bytes.length}`);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(100));
    const user = await primary.request("POST", "/v1/admin/users", { headers: { authorization: `Bearer ${adminToken}` }, json: { email: "u@example.test", password: "a long enough password", tier: "free" } });
    expect(user.status).toBe(201);
    const login = await bodyOf(await primary.request("POST", "/v1/auth/login", { json: { email: "u@example.test", password: "a long enough password" } }));
    const userKey = (await bodyOf(await primary.request("POST", "/v1/keys", { headers: { authorization: `Bearer ${login.data.accessToken}` }, json: { name: "k" } }))).data.key;
    expect((await primary.request("GET", "/v1/snapshots/latest", { headers: { "x-api-key": userKey } })).status).toBe(403);
  }, 30_000);

  test("with the primary stopped, the edge keeps answering and /readyz says why pulls fail", async () => {
    await primary.stop();
    const error = await waitFor("a failed pull", async () => {
      const body = await bodyOf(await edge.request("GET", "/readyz"));
      return body.edge.lastPullError ? (body as { edge: { lastPullError: string; dataAgeSeconds: number } }) : null;
    });
    expect(error.edge.lastPullError).toBeTruthy();
    expect(typeof error.edge.dataAgeSeconds).toBe("number");
    expect((await edgeReputation("198.51.100.2"))?.totalReports).toBe(1);
  }, 60_000);
});

describe("an edge with another public key", () => {
  test("never serves the snapshots it pulls", async () => {
    const other = createSandbox();
    const stranger = createSandbox();
    let otherPrimary: RunningServer | null = null;
    let wrongEdge: RunningServer | null = null;
    try {
      expect((await runCli(other, ["snapshot", "keygen", "--out", join(other.dir, "other")])).code).toBe(0);
      expect((await runCli(stranger, ["snapshot", "keygen", "--out", join(stranger.dir, "stranger")])).code).toBe(0);
      otherPrimary = await startServer(other, { args: ["--sign-key", join(other.dir, "other.key")] });
      const creds = parseFirstStartCredentials(otherPrimary.output())!;
      const token = (await bodyOf(await otherPrimary.request("POST", "/v1/auth/login", { json: { email: creds.email, password: creds.password } }))).data.accessToken;
      const key = (await bodyOf(await otherPrimary.request("POST", "/v1/keys", { headers: { authorization: `Bearer ${token}` }, json: { name: "edge" } }))).data.key;
      expect((await otherPrimary.request("POST", "/v1/admin/jobs/snapshot/run", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      wrongEdge = await startServer(stranger, {
        args: ["--follow", otherPrimary.url, "--follow-key", key, "--pubkey", join(stranger.dir, "stranger.pub"), "--every", "1", "--api-key", EDGE_KEY],
        waitReady: false,
      });
      expect(wrongEdge).not.toBeNull();
      const failed = await waitFor("a refused snapshot", async () => {
        const body = await bodyOf(await wrongEdge!.request("GET", "/readyz"));
        return body.edge.lastPullError ? (body as { edge: { lastPullError: string } }) : null;
      });
      expect(failed.edge.lastPullError).toContain("does not verify");
      expect((await wrongEdge!.request("GET", "/readyz")).status).toBe(503);
      expect((await wrongEdge!.request("GET", "/v1/ip/198.51.100.1/reputation", { headers: { "x-api-key": EDGE_KEY } })).status).toBe(503);
    } finally {
      await wrongEdge?.stop("SIGKILL");
      await otherPrimary?.stop("SIGKILL");
      other.cleanup();
      stranger.cleanup();
    }
  }, 60_000);
});
