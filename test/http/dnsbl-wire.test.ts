// The DNS listener against packets dig will not send (contract 17): FORMERR for a readable header without one
// well-formed question, no answer to responses or scraps, TC over UDP and the full answer over TCP, RFC 7766
// framing (pipelining, split messages, oversized lengths, the idle timeout, thousands of idle connections),
// --dns-allow, and the /metrics counters. Queries are encoded and answers decoded with dns-packet, not our codec.

import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import dnsPacket from "dns-packet";
import { ALL_CATEGORIES_MASK } from "../../src/domain/categories";
import { createDnsHarness, type DnsHarness, ipv4Name, putInIndex, rawTcpClient, rawUdpClient, TEST_ZONE, withLength } from "../support/dns";

// Each test runs dig or a process several times: room for a loaded machine (bun's default is 5 s).
setDefaultTimeout(60_000);

let d: DnsHarness;

const query = (name: string, type: dnsPacket.RecordType = "A", id = 4242, edns?: number) =>
  dnsPacket.encode({
    type: "query",
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: "IN" }],
    additionals: edns === undefined ? [] : [{ type: "OPT", name: ".", udpPayloadSize: edns }],
  } as dnsPacket.Packet);

/** dns-packet's decoding, with the header fields its types leave out. */
const decode = (bytes: Uint8Array) => dnsPacket.decode(Buffer.from(bytes)) as dnsPacket.DecodedPacket & { rcode: string; flag_qr: boolean };

/** A header (id 7, flags RD) with these counts, then `rest`. */
const header = (qd: number, rest: number[] = [], flags = 0x0100, counts: [number, number, number] = [0, 0, 0]) =>
  Uint8Array.from([0, 7, flags >> 8, flags & 0xff, 0, qd, 0, counts[0], 0, counts[1], 0, counts[2], ...rest]);
const labels = (name: string) => name.split(".").flatMap((l) => [l.length, ...new TextEncoder().encode(l)]);

beforeAll(async () => {
  d = await createDnsHarness();
  // Straight into the index (as the blocklist test does for bulk data): HIGH, every category.
  putInIndex(d, "198.51.100.9", { reputationScore: 30, totalReports: 40, categoriesMask: ALL_CATEGORIES_MASK });
}, 60_000);

afterAll(async () => {
  await d?.close();
}, 60_000);

describe("packets that are not one well-formed question", () => {
  const formErrors: [string, Uint8Array][] = [
    ["no question (QDCOUNT 0)", header(0)],
    ["two questions", header(2, [...labels("a.example"), 0, 0, 1, 0, 1, ...labels("b.example"), 0, 0, 1, 0, 1])],
    ["a name cut short", header(1, [7, 0x61, 0x62])],
    ["no type and class after the name", header(1, [...labels(TEST_ZONE), 0, 0])],
    ["a compression pointer to itself", header(1, [0xc0, 12, 0, 1, 0, 1])],
    ["two pointers in a loop", header(1, [1, 0x61, 0xc0, 16, 0xc0, 12, 0, 1, 0, 1])],
    ["a pointer past the end", header(1, [0xc0, 0xff, 0, 1, 0, 1])],
    ["a pointer forward", header(1, [0xc0, 14, 1, 0x61, 0, 0, 1, 0, 1])],
    ["a label of a reserved type (0x40)", header(1, [0x41, 0x61, 0, 0, 1, 0, 1])],
    ["an additional record cut short", header(1, [...labels(TEST_ZONE), 0, 0, 1, 0, 1, 0, 0, 41], 0x0100, [0, 0, 1])],
    ["two OPT records", header(1, [...labels(TEST_ZONE), 0, 0, 1, 0, 1, 0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0], 0x0100, [0, 0, 2])],
  ];

  test.each(formErrors)("%s: FORMERR with the query's id, and the server answers the next query", async (_what, packet) => {
    const client = await rawUdpClient(d.port);
    try {
      const answer = await client.ask(packet);
      expect(answer).not.toBeNull();
      const decoded = decode(answer!);
      expect(decoded.id).toBe(7);
      expect(decoded.rcode).toBe("FORMERR");
      expect(decoded.flag_qr).toBe(true);
      const normal = decode((await client.ask(query(`2.0.0.127.${TEST_ZONE}`)))!);
      expect(normal.rcode).toBe("NOERROR");
    } finally {
      client.close();
    }
  });

  test("a response (QR set) and a packet shorter than a header get no answer; the query after them does", async () => {
    const client = await rawUdpClient(d.port);
    try {
      const response = query(`2.0.0.127.${TEST_ZONE}`, "A", 1);
      response[2] |= 0x80;
      client.send(response);
      client.send(Uint8Array.from([1, 2, 3]));
      client.send(new Uint8Array(0));
      // Packets are answered in order: the first answer is the normal query's (id 99), so nothing came before it.
      const answer = await client.ask(query(`2.0.0.127.${TEST_ZONE}`, "A", 99));
      expect(decode(answer!).id).toBe(99);
      expect(client.waiting).toBe(0);
    } finally {
      client.close();
    }
  });
});

describe("truncation", () => {
  // A long zone: 199 bytes of name, so the 25 A records of an address with every category pass 512 bytes.
  const zone = `${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.example`;
  let long: DnsHarness;
  beforeAll(async () => {
    long = await createDnsHarness({ dnsZone: zone });
    putInIndex(long, "198.51.100.9", { reputationScore: 30, totalReports: 40, categoriesMask: ALL_CATEGORIES_MASK });
  }, 60_000);
  afterAll(async () => {
    await long?.close();
  }, 60_000);

  test("an answer over 512 bytes is truncated over UDP (TC, no records); over TCP it comes whole", async () => {
    const name = ipv4Name("198.51.100.9", zone);
    const udp = await long.dig(name, "A", { edns: false, ignoreTruncation: true });
    expect(udp.status).toBe("NOERROR");
    expect(udp.flags).toContain("tc");
    expect(udp.answer).toEqual([]);
    const tcp = await long.dig(name, "A", { tcp: true });
    expect(tcp.flags).not.toContain("tc");
    expect(tcp.answer.length).toBe(25);
    // dig's default: it retries the truncated answer over TCP by itself.
    expect((await long.dig(name, "A", { edns: false })).answer.length).toBe(25);
  });

  test("with EDNS, the requester's payload size (up to 1232) is the limit", async () => {
    const name = ipv4Name("198.51.100.9", zone);
    const big = await long.dig(name, "A", { edns: 1232 });
    expect(big.flags).not.toContain("tc");
    expect(big.answer.length).toBe(25);
    const small = await long.dig(name, "A", { edns: 512, ignoreTruncation: true });
    expect(small.flags).toContain("tc");
    expect(small.ednsUdp).toBe(1232);
  });
});

describe("TCP (RFC 7766)", () => {
  test("several queries pipelined in one write are answered in order on the connection", async () => {
    const c = await rawTcpClient(d.port);
    try {
      const names = [ipv4Name("198.51.100.9"), `1.0.0.127.${TEST_ZONE}`, `2.0.0.127.${TEST_ZONE}`];
      const bytes = names.map((n, i) => withLength(query(n, "A", 100 + i)));
      c.write(Uint8Array.from(bytes.flatMap((b) => [...b])));
      const answers = (await c.messages(3)).map((m) => decode(m));
      expect(answers.map((a) => [a.id, a.rcode])).toEqual([
        [100, "NOERROR"],
        [101, "NXDOMAIN"],
        [102, "NOERROR"],
      ]);
    } finally {
      c.end();
    }
  });

  test("a message split across writes, byte by byte, is answered once whole", async () => {
    const c = await rawTcpClient(d.port);
    try {
      const bytes = withLength(query(`2.0.0.127.${TEST_ZONE}`, "TXT", 55));
      for (const byte of bytes) {
        c.write(Uint8Array.of(byte));
        await Bun.sleep(1);
      }
      const [answer] = await c.messages(1);
      const decoded = decode(answer);
      expect(decoded.id).toBe(55);
      expect(decoded.answers?.[0].type).toBe("TXT");
    } finally {
      c.end();
    }
  });

  test("an oversized length closes the connection; the server goes on answering", async () => {
    const c = await rawTcpClient(d.port);
    c.write(Uint8Array.from([0xff, 0xff, 1, 2, 3]));
    expect(await c.closedWithin(10_000)).toBe(true);
    const client = await rawUdpClient(d.port);
    expect(decode((await client.ask(query(`2.0.0.127.${TEST_ZONE}`)))!).rcode).toBe("NOERROR");
    client.close();
  });

  test("an idle connection is closed after 10 s, not before", async () => {
    const c = await rawTcpClient(d.port);
    const opened = Date.now();
    expect(await c.closedWithin(60_000)).toBe(true);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(9_000);
  }, 90_000);

  test("thousands of idle connections: at most 512 stay open, and new ones are answered", async () => {
    const idle = [];
    for (let i = 0; i < 2000; i++) idle.push(await rawTcpClient(d.port));
    expect(d.dns.listener.connections).toBeLessThanOrEqual(512);
    const fresh = await rawTcpClient(d.port);
    fresh.write(withLength(query(ipv4Name("198.51.100.9"), "A", 77)));
    const [answer] = await fresh.messages(1);
    expect(decode(answer).id).toBe(77);
    const client = await rawUdpClient(d.port);
    expect(await client.ask(query(`2.0.0.127.${TEST_ZONE}`))).not.toBeNull();
    client.close();
    for (const c of idle) c.end();
    fresh.end();
  }, 120_000);
});

describe("--dns-allow", () => {
  test("a source outside the allowed networks is answered REFUSED; one inside is answered", async () => {
    const closed = await createDnsHarness({ dnsAllow: ["10.0.0.0/8", "2001:db8::/32"] });
    const open = await createDnsHarness({ dnsAllow: ["127.0.0.0/8"] });
    try {
      for (const tcp of [false, true]) {
        const refused = await closed.dig(`2.0.0.127.${TEST_ZONE}`, "A", { tcp });
        expect(refused.status).toBe("REFUSED");
        expect(refused.answer).toEqual([]);
        expect((await open.dig(`2.0.0.127.${TEST_ZONE}`, "A", { tcp })).status).toBe("NOERROR");
      }
    } finally {
      await closed.close();
      await open.close();
    }
  });
});

describe("/metrics", () => {
  test("counts queries by transport and rcode, and the answers that said listed", async () => {
    const m = await createDnsHarness();
    try {
      putInIndex(m, "198.51.100.9", { reputationScore: 10, totalReports: 3, categoriesMask: 1 });
      await m.dig(ipv4Name("198.51.100.9"));
      await m.dig(ipv4Name("198.51.100.9"), "TXT", { tcp: true });
      await m.dig(ipv4Name("198.51.100.10"));
      await m.dig("example.com");
      const text = await (await m.harness.call("GET", "/metrics")).text();
      expect(text).toContain('abuse_intel_dns_queries_total{transport="udp",rcode="NOERROR"} 1');
      expect(text).toContain('abuse_intel_dns_queries_total{transport="tcp",rcode="NOERROR"} 1');
      expect(text).toContain('abuse_intel_dns_queries_total{transport="udp",rcode="NXDOMAIN"} 1');
      expect(text).toContain('abuse_intel_dns_queries_total{transport="udp",rcode="REFUSED"} 1');
      expect(text).toContain("abuse_intel_dns_listed_total 2");
    } finally {
      await m.close();
    }
  });
});
