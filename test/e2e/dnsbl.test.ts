// The DNS blocklist on the built executable (contract 17), asked by dig: `serve --dns-port 0` names its port and
// answers a reported address, writes an access-log line per query and counts in /metrics; a DNS port in use and a
// bad option stop `serve` naming them; `serve --snapshot` answers from the snapshot; an edge before its first
// snapshot answers SERVFAIL.

import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { createServer } from "node:net";
import { createSandbox, parseFirstStartCredentials, runCli, type Sandbox } from "./support/binary";
import { bodyOf, startServer, type RunningServer } from "./support/server";
import { digAt, ipv4Name } from "../support/dns";

// Each test runs dig or a process several times: room for a loaded machine (bun's default is 5 s).
setDefaultTimeout(60_000);

const ZONE = "dnsbl.e2e.test";
const DNS_LINE = /abuse-intel answering the DNS blocklist (\S+) on udp\+tcp 127\.0\.0\.1:(\d+)/;

let sandbox: Sandbox;
let server: RunningServer;
let dnsPort: number;

beforeAll(async () => {
  sandbox = createSandbox();
  server = await startServer(sandbox, { args: ["--dns-port", "0", "--dns-zone", ZONE, "--dns-risk-level", "MEDIUM", "--access-log"] });
  const line = await server.waitForOutput(DNS_LINE);
  expect(line[1]).toBe(ZONE);
  dnsPort = Number(line[2]);
  await server.waitForOutput(/password\s*:/i, 3_000).catch(() => undefined);
  const admin = parseFirstStartCredentials(server.output());
  if (!admin) throw new Error(`no admin credentials printed:\n${server.output()}`);
  const login = await bodyOf(await server.request("POST", "/v1/auth/login", { json: { email: admin.email, password: admin.password } }));
  const res = await server.request("POST", "/v1/ip/report", {
    headers: { authorization: `Bearer ${login.data.accessToken}` },
    json: { ip: "203.0.113.7", category: "spam", severity: 5, description: "e2e" },
  });
  expect(res.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sandbox?.cleanup();
}, 30_000);

describe("serve --dns-port 0", () => {
  test("answers over UDP and TCP: the reported address listed MEDIUM, another NXDOMAIN, the test point", async () => {
    for (const tcp of [false, true]) {
      const listed = await digAt(dnsPort, ipv4Name("203.0.113.7", ZONE), "A", { tcp });
      expect(listed.status).toBe("NOERROR");
      expect(listed.answer.map((r) => r.data).sort()).toEqual(["127.0.0.2", "127.0.1.10", "127.0.1.11", "127.0.1.12", "127.0.2.2"]);
      expect((await digAt(dnsPort, ipv4Name("203.0.113.8", ZONE), "A", { tcp })).status).toBe("NXDOMAIN");
      expect((await digAt(dnsPort, `2.0.0.127.${ZONE}`, "A", { tcp })).answer.map((r) => r.data)).toEqual(["127.0.0.2"]);
    }
  });

  test("--access-log writes one line per DNS query; /metrics counts them", async () => {
    await digAt(dnsPort, ipv4Name("203.0.113.7", ZONE), "TXT");
    await server.waitForOutput(new RegExp(`DNS udp 127\\.0\\.0\\.1 7\\.113\\.0\\.203\\.${ZONE.replaceAll(".", "\\.")}\\. TXT NOERROR listed [\\d.]+ms`));
    const metrics = await (await server.request("GET", "/metrics")).text();
    expect(metrics).toMatch(/abuse_intel_dns_queries_total\{transport="udp",rcode="NOERROR"\} \d+/);
    expect(metrics).toMatch(/abuse_intel_dns_queries_total\{transport="tcp",rcode="NXDOMAIN"\} \d+/);
    expect(Number(/abuse_intel_dns_listed_total (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3);
  });

  test("clients that close their port before the answer cost no log lines, and the next query is answered", async () => {
    const before = server.output().length;
    const query = Uint8Array.from([0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, ...ipv4Name("203.0.113.7", ZONE).split(".").flatMap((label) => [label.length, ...Buffer.from(label)]), 0, 0, 1, 0, 1]);
    for (let i = 0; i < 50; i++) {
      const gone = await Bun.udpSocket({ hostname: "127.0.0.1" });
      gone.send(query, dnsPort, "127.0.0.1");
      gone.close();
    }
    // Each answer to a closed port comes back as ICMP port unreachable, which fails a later send on the server's
    // socket (ECONNREFUSED); answered queries after those still get their answer.
    for (let i = 0; i < 5; i++) expect((await digAt(dnsPort, ipv4Name("203.0.113.7", ZONE))).status).toBe("NOERROR");
    await server.waitForOutput(/DNS udp 127\.0\.0\.1 7\.113\.0\.203\.\S+ A NOERROR listed/);
    // --access-log is on: the only lines written since are access-log lines, one per query.
    const lines = server.output().slice(before).split("\n").filter((line) => line.trim() !== "");
    expect(lines.filter((line) => !/ DNS udp 127\.0\.0\.1 /.test(line))).toEqual([]);
    expect(lines.length).toBeLessThanOrEqual(55);
    // They are counted instead (the refusals surface on the server's later receives and sends).
    const metrics = await (await server.request("GET", "/metrics")).text();
    expect(Number(/abuse_intel_dns_udp_errors_total (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(0);
  });

  test("a DNS port in use stops serve, naming the option and the port; so does a bad value", async () => {
    const other = createSandbox();
    try {
      const busy = await runCli(other, ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", other.dataDir, "--dns-port", String(dnsPort)]);
      expect(busy.code).not.toBe(0);
      expect(busy.stderr).toContain(`--dns-port`);
      expect(busy.stderr).toContain(`127.0.0.1:${dnsPort}`);
      // The TCP half alone in use (a free UDP port) stops it too.
      const tcpOnly = createServer();
      const tcpPort = await new Promise<number>((resolve) => tcpOnly.listen(0, "127.0.0.1", () => resolve((tcpOnly.address() as { port: number }).port)));
      try {
        const half = await runCli(other, ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", other.dataDir, "--dns-port", String(tcpPort)]);
        expect(half.code).not.toBe(0);
        expect(half.stderr).toContain(`127.0.0.1:${tcpPort}`);
      } finally {
        tcpOnly.close();
      }
      // And the UDP half alone.
      const udpOnly = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0 });
      try {
        const half = await runCli(other, ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", other.dataDir, "--dns-port", String(udpOnly.port)]);
        expect(half.code).not.toBe(0);
        expect(half.stderr).toContain(`127.0.0.1:${udpOnly.port}`);
      } finally {
        udpOnly.close();
      }
      for (const [flag, value] of [
        ["--dns-zone", "not a zone!"],
        ["--dns-risk-level", "SEVERE"],
        ["--dns-ttl", "-5"],
        ["--dns-allow", "10.0.0.0/33"],
        ["--dns-port", "70000"],
      ]) {
        const bad = await runCli(other, ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", other.dataDir, "--dns-port", "0", flag, value]);
        expect({ flag, code: bad.code }).toEqual({ flag, code: 2 });
        expect(bad.stderr).toContain(flag);
      }
    } finally {
      other.cleanup();
    }
  }, 90_000);
});

describe("serve --snapshot and serve --follow", () => {
  test("serve --snapshot answers DNS from the snapshot", async () => {
    const exported = await runCli(sandbox, ["snapshot", "export", "--out", "dns-snap.sqlite", "--data-dir", sandbox.dataDir]);
    expect(exported.code, exported.stderr).toBe(0);
    const other = createSandbox();
    const snap = await startServer(other, { args: ["--snapshot", `${sandbox.dir}/dns-snap.sqlite`, "--api-key", "k-0123456789abcdef", "--dns-port", "0", "--dns-zone", ZONE, "--dns-risk-level", "MEDIUM"] });
    try {
      const port = Number((await snap.waitForOutput(DNS_LINE))[2]);
      const a = await digAt(port, ipv4Name("203.0.113.7", ZONE), "A", { tcp: true });
      expect(a.status).toBe("NOERROR");
      expect(a.answer.map((r) => r.data)).toContain("127.0.2.2");
      expect((await digAt(port, ipv4Name("203.0.113.8", ZONE))).status).toBe("NXDOMAIN");
    } finally {
      await snap.stop();
      other.cleanup();
    }
  }, 90_000);

  test("an edge before its first snapshot answers SERVFAIL", async () => {
    const keygen = await runCli(sandbox, ["snapshot", "keygen", "--out", "dns-edge"]);
    expect(keygen.code, keygen.stderr).toBe(0);
    const other = createSandbox();
    // The primary's URL is a closed port of 127.0.0.1: no snapshot ever comes.
    const edge = await startServer(other, {
      args: ["--follow", "http://127.0.0.1:9", "--follow-key", "aik_none", "--pubkey", `${sandbox.dir}/dns-edge.pub`, "--api-key", "k-0123456789abcdef", "--dns-port", "0", "--dns-zone", ZONE],
      waitReady: false,
    });
    try {
      const port = Number((await edge.waitForOutput(DNS_LINE))[2]);
      for (const tcp of [false, true]) expect((await digAt(port, ipv4Name("203.0.113.7", ZONE), "A", { tcp })).status).toBe("SERVFAIL");
    } finally {
      await edge.stop();
      other.cleanup();
    }
  }, 90_000);
});
