// Snapshots and offline use on the built executable (contract section 8): a snapshot exported while the server
// runs, signed and verified (a flipped byte and a wrong key are caught), offline `check` and `blocklist` equal to
// the API's answers for the same data, from the snapshot and from the data directory, and `serve --snapshot`.
//
// Blocklist equality is byte for byte: the json body and the nft/ipset header carry the list's time, so the CLI
// is given the API's time with --generated-at; txt, cidr and csv carry none and are compared as they come.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createSandbox, parseFirstStartCredentials, runCli, type Sandbox } from "./support/binary";
import { bodyOf, startServer, type RunningServer } from "./support/server";

const PASSWORD_LINE = /^[\s#*-]*(?:admin\s+)?password\s*[:=]/im;
const STATIC_KEY = "edge-box-static-key-0123456789abcdef";

let sandbox: Sandbox;
let server: RunningServer;
let apiKey: string;
let snapshotFile: string;

const key = () => ({ "x-api-key": apiKey });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const reported = ["203.0.113.7", "203.0.113.9", "198.51.100.20", "45.33.32.156", "8.8.4.4", "2001:db8::42", "2a00:1450:4001:80b::200e"];
const probes = [...reported, "8.8.8.8", "10.1.2.3", "2001:db8::1"];

async function login(email: string, password: string): Promise<string> {
  const res = await server.request("POST", "/v1/auth/login", { json: { email, password } });
  expect(res.status).toBe(200);
  return (await bodyOf(res)).data.accessToken;
}

beforeAll(async () => {
  sandbox = createSandbox();
  server = await startServer(sandbox);
  await server.waitForOutput(PASSWORD_LINE, 3_000).catch(() => undefined);
  const admin = parseFirstStartCredentials(server.output());
  if (!admin?.apiKey) throw new Error(`no admin credentials printed:\n${server.output()}`);
  apiKey = admin.apiKey;
  const adminToken = await login(admin.email, admin.password);
  // Two reporters besides the admin, so no address reaches the three reporters that community verification
  // needs: nothing the verify job does can change an answer between the export and the comparisons.
  const tokens = [adminToken];
  for (const email of ["snap-one@example.test", "snap-two@example.test"]) {
    const password = `pw-${crypto.randomUUID()}`;
    const created = await server.request("POST", "/v1/admin/users", { headers: bearer(adminToken), json: { email, password, tier: "enterprise" } });
    expect(created.status).toBe(201);
    tokens.push(await login(email, password));
  }
  for (const [i, ip] of reported.entries()) {
    for (const [j, token] of tokens.slice(0, 1 + (i % 2)).entries()) {
      const category = ["ssh", "port-scan", "spam"][(i + j) % 3];
      const res = await server.request("POST", "/v1/ip/report", { headers: bearer(token), json: { ip, category, severity: 3 + (i % 3), description: `secret text ${i}` } });
      expect(res.status).toBe(201);
    }
  }
  expect((await server.request("POST", "/v1/admin/allowlist", { headers: bearer(adminToken), json: { cidr: "8.8.4.0/24", note: "resolvers" } })).status).toBe(201);

  const keygen = await runCli(sandbox, ["snapshot", "keygen", "--out", "signing"]);
  expect(keygen.code, keygen.stderr).toBe(0);
  snapshotFile = join(sandbox.dir, "snap.sqlite");
  const exported = await runCli(sandbox, ["snapshot", "export", "--out", "snap.sqlite", "--sign-key", "signing.key", "--data-dir", sandbox.dataDir]);
  expect(exported.code, exported.stderr).toBe(0);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sandbox?.cleanup();
}, 30_000);

describe("export and verify", () => {
  test("keygen writes the private key with mode 0600 and the public key beside it", () => {
    expect(statSync(join(sandbox.dir, "signing.key")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(sandbox.dir, "signing.pub"), "utf8")).toContain("BEGIN PUBLIC KEY");
  });

  test("info describes the snapshot taken from the running server", async () => {
    const info = await runCli(sandbox, ["snapshot", "info", "snap.sqlite", "--json"]);
    expect(info.code, info.stderr).toBe(0);
    const body = JSON.parse(info.stdout);
    expect(body).toMatchObject({ formatVersion: 1, signed: true, counts: { addresses: reported.length, allowlist: 1 } });
    const human = await runCli(sandbox, ["snapshot", "info", "snap.sqlite"]);
    expect(human.stdout).toMatch(/addresses\s+7/);
    expect(readFileSync(snapshotFile).includes("secret text")).toBe(false);
    expect(readFileSync(snapshotFile).includes("snap-one@example.test")).toBe(false);
  });

  test("verify: exit 0 with the right key", async () => {
    const ok = await runCli(sandbox, ["snapshot", "verify", "snap.sqlite", "--pubkey", "signing.pub"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^OK: .*signature valid/);
  });

  test("verify: a wrong key fails with the reason", async () => {
    expect((await runCli(sandbox, ["snapshot", "keygen", "--out", "other"])).code).toBe(0);
    const bad = await runCli(sandbox, ["snapshot", "verify", "snap.sqlite", "--pubkey", "other.pub"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/signature does not match/);
  });

  test("verify: one flipped byte fails", async () => {
    const copy = join(sandbox.dir, "flipped.sqlite");
    copyFileSync(snapshotFile, copy);
    const bytes = readFileSync(copy);
    const at = bytes.indexOf("45.33.32.156");
    expect(at).toBeGreaterThan(0);
    bytes[at + 3] ^= 0x01;
    writeFileSync(copy, bytes);
    const bad = await runCli(sandbox, ["snapshot", "verify", "flipped.sqlite", "--pubkey", "signing.pub"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/FAILED/);
  });
});

describe("offline check equals the API", () => {
  async function apiDetails(): Promise<string[]> {
    const out: string[] = [];
    for (const ip of probes) {
      const res = await server.request("GET", `/v1/ip/${ip}`, { headers: key() });
      expect(res.status).toBe(200);
      out.push(await res.text());
    }
    return out;
  }

  test.each([
    ["from the snapshot", ["--snapshot", "snap.sqlite"]],
    ["from the data directory", ["--data-dir", "data"]],
  ])("%s, addresses as arguments and on stdin", async (_name, source) => {
    const api = await apiDetails();
    const args = await runCli(sandbox, ["check", ...source, "--json", ...probes]);
    expect(args.code, args.stderr).toBe(0);
    expect(args.stdout.trimEnd().split("\n")).toEqual(api);
    const stdin = await runCli(sandbox, ["check", ...source, "--json", "-"], { stdin: probes.join("\n") + "\n" });
    expect(stdin.code, stdin.stderr).toBe(0);
    expect(stdin.stdout.trimEnd().split("\n")).toEqual(api);
    expect(JSON.parse(api[0])).toMatchObject({ ip: "203.0.113.7", reports: 1 });
  });

  test("a table without --json, and exit 1 naming a bad address", async () => {
    const res = await runCli(sandbox, ["check", "--snapshot", "snap.sqlite", "45.33.32.156", "not-an-ip"]);
    expect(res.code).toBe(1);
    expect(res.stdout.split("\n")[0]).toMatch(/^IP\s+SCORE\s+THREAT/);
    expect(res.stdout).toMatch(/45\.33\.32\.156\s+\d+\s+(low|medium|high|critical)/);
    expect(res.stderr).toContain("not-an-ip");
  });
});

describe("offline blocklist equals the API, byte for byte", () => {
  const cases: [string, string, string[]][] = [
    ["txt", "format=txt&riskLevel=LOW", ["--format", "txt", "--risk", "low"]],
    ["cidr", "format=cidr&riskLevel=LOW", ["--format", "cidr", "--risk", "LOW"]],
    ["csv", "format=csv&riskLevel=LOW&category=ssh,spam", ["--format", "csv", "--risk", "low", "--category", "ssh,spam"]],
    ["txt, IPv6", "format=txt&riskLevel=LOW&ipVersion=6", ["--format", "txt", "--risk", "low", "--ip-version", "6"]],
    ["json", "riskLevel=LOW", ["--risk", "low"]],
    ["json, default filters", "", []],
    ["nft", "format=nft&riskLevel=LOW", ["--format", "nft", "--risk", "low"]],
    ["ipset", "format=ipset&riskLevel=LOW&ipVersion=4", ["--format", "ipset", "--risk", "low", "--ip-version", "4"]],
  ];
  const timeOf = (body: string): string | null =>
    body.match(/"generatedAt":"([^"]+)"/)?.[1] ?? body.match(/generated at (\d{4}-\d\d-\d\dT[\d:.]+Z)/)?.[1] ?? null;

  test.each(cases)("%s", async (_name, query, flags) => {
    const res = await server.request("GET", `/v1/ip/blocklist${query ? `?${query}` : ""}`, { headers: key() });
    expect(res.status).toBe(200);
    const api = await res.text();
    const time = timeOf(api);
    const pinned = time === null ? [] : ["--generated-at", time];
    for (const source of [["--snapshot", "snap.sqlite"], ["--data-dir", "data"]]) {
      const cli = await runCli(sandbox, ["blocklist", ...source, ...flags, ...pinned]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toBe(api);
    }
    if (query.includes("LOW")) expect(api).toContain(query.includes("ipVersion=6") ? "2001:db8::42" : "45.33.32.156");
    expect(api).not.toContain("8.8.4.4"); // allowlisted
  });
});

describe("serve --snapshot", () => {
  let readOnly: RunningServer;
  beforeAll(async () => {
    readOnly = await startServer(sandbox, { args: ["--snapshot", "snap.sqlite", "--api-key", STATIC_KEY] });
  }, 30_000);
  afterAll(async () => {
    await readOnly?.stop();
  }, 30_000);

  test("answers lookups and blocklists as the live server does", async () => {
    for (const path of [...probes.map((ip) => `/v1/ip/${ip}`), "/v1/ip/recent?limit=5", "/v1/ip/blocklist?format=txt&riskLevel=LOW", "/v1/ip/45.33.32.156/reputation"]) {
      const live = await server.request("GET", path, { headers: key() });
      const snap = await readOnly.request("GET", path, { headers: { "x-api-key": STATIC_KEY } });
      expect(snap.status).toBe(live.status);
      const [a, b] = [await snap.text(), await live.text()];
      expect(a.replace(/"cached":(true|false)/, "")).toBe(b.replace(/"cached":(true|false)/, ""));
    }
    const bulk = await readOnly.request("POST", "/v1/ip/bulk", { headers: { "x-api-key": STATIC_KEY }, json: { ips: probes } });
    expect(bulk.status).toBe(200);
    expect((await bodyOf(bulk)).data.results).toHaveLength(probes.length);
  });

  test("writes give 503 read_only; other keys 401", async () => {
    const write = await readOnly.request("POST", "/v1/ip/report", { headers: { "x-api-key": STATIC_KEY }, json: { ip: "192.0.2.1", category: "spam" } });
    expect(write.status).toBe(503);
    expect(await bodyOf(write)).toMatchObject({ success: false, code: "read_only" });
    expect((await readOnly.request("POST", "/v1/auth/login", { json: { email: "a@b.c", password: "x" } })).status).toBe(503);
    expect((await readOnly.request("GET", "/v1/ip/8.8.8.8", { headers: key() })).status).toBe(401);
    expect((await readOnly.request("GET", "/v1/ip/8.8.8.8")).status).toBe(401);
  });

  test("/api/v2 and the bouncer stream answer from the snapshot; /api/v2 reports get 503", async () => {
    const headers = { Key: STATIC_KEY };
    const check = await readOnly.request("GET", "/api/v2/check?ipAddress=45.33.32.156", { headers });
    expect(check.status).toBe(200);
    const live = await bodyOf(await server.request("GET", "/v1/ip/45.33.32.156/reputation", { headers: key() }));
    expect((await bodyOf(check)).data.abuseConfidenceScore).toBe(100 - live.data.reputationScore);
    const report = await readOnly.request("POST", "/api/v2/report", { headers: { ...headers, "content-type": "application/x-www-form-urlencoded" }, body: "ip=192.0.2.1&categories=18" });
    expect(report.status).toBe(503);
    expect((await bodyOf(report)).errors[0].status).toBe(503);
    const stream = await readOnly.request("GET", "/v1/decisions/stream?startup=true", { headers: { "X-Api-Key": STATIC_KEY } });
    expect(stream.status).toBe(200);
    const body = await bodyOf(stream);
    expect(Array.isArray(body.new) && Array.isArray(body.deleted)).toBe(true);
  });

  test("the key can come from ABUSE_INTEL_API_KEYS", async () => {
    const fromEnv = await startServer(sandbox, { args: ["--snapshot", "snap.sqlite"], env: { ABUSE_INTEL_API_KEYS: "first-env-key-0123456789, second-env-key-0123456789" } });
    try {
      expect((await fromEnv.request("GET", "/v1/ip/45.33.32.156", { headers: { "x-api-key": "second-env-key-0123456789" } })).status).toBe(200);
      expect((await fromEnv.request("GET", "/v1/ip/45.33.32.156", { headers: { "x-api-key": STATIC_KEY } })).status).toBe(401);
    } finally {
      await fromEnv.stop();
    }
  });
});
