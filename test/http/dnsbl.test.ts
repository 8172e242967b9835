// The DNS blocklist (contract 17) asked by Debian's dig over UDP and TCP: listed addresses (A codes, TXT, ANY,
// other types), unlisted and malformed names, IPv6 nibbles, the test points, the apex (SOA, NS, ns.ZONE), names
// outside the zone, EDNS0, the risk level option, and consistency with the API: a report, an allowlist entry and
// a feed change the next DNS answer, and the SOA serial grows with them. Data goes in through the HTTP API.

import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf } from "../support/harness";
import { createDnsHarness, type DigAnswer, type DnsHarness, ipv4Name, ipv6Name, TEST_ZONE } from "../support/dns";

// Each test runs dig or a process several times: room for a loaded machine (bun's default is 5 s).
setDefaultTimeout(60_000);

let d: DnsHarness;
let u1: TestUser;
let u2: TestUser;
let u3: TestUser;
let admin: TestUser;

const report = async (who: TestUser, ip: string, category: string, severity = 5) => {
  const res = await d.harness.call("POST", "/v1/ip/report", { headers: who.jwt, json: { ipAddress: ip, category, description: "test", severity } });
  expect(res.status).toBe(201);
};
const addresses = (a: DigAnswer, type = "A") => a.answer.filter((r) => r.type === type).map((r) => r.data).sort();
const soaSerial = (a: DigAnswer) => Number(a.answer.concat(a.authority).find((r) => r.type === "SOA")?.data.split(" ")[2]);
const transports = [
  { name: "UDP", tcp: false },
  { name: "TCP", tcp: true },
];

beforeAll(async () => {
  d = await createDnsHarness();
  const h = d.harness;
  [u1, u2, u3] = await Promise.all([addUser(h, { tier: "enterprise" }), addUser(h, { tier: "enterprise" }), addUser(h, { tier: "enterprise" })]);
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
  // One severity-5 report: 51 MEDIUM; two reporters: 26 HIGH; three: 14 CRITICAL (contract 5.7).
  await report(u1, "198.51.100.2", "SSH");
  await report(u2, "198.51.100.2", "brute-force");
  await report(u1, "198.51.100.3", "SPAM");
  await report(u1, "192.0.2.77", "SPAM");
  await report(u2, "192.0.2.77", "MALWARE");
  await report(u3, "192.0.2.77", "PORT_SCAN");
  await report(u1, "2001:db8::5", "PORT_SCAN");
  await report(u2, "2001:db8::5", "DDOS");
}, 60_000);

afterAll(async () => {
  await d?.close();
}, 60_000);

describe.each(transports)("over $name", ({ tcp }) => {
  test("a listed IPv4 address: NOERROR, authoritative, no RA, 127.0.0.2, a 127.0.1.N per AbuseIPDB number, 127.0.2.L", async () => {
    const a = await d.dig(ipv4Name("198.51.100.2"), "A", { tcp });
    expect(a.status).toBe("NOERROR");
    expect(a.flags).toContain("aa");
    expect(a.flags).not.toContain("ra");
    // SSH is 22; BRUTE_FORCE is AbuseIPDB's 5 (FTP Brute-Force) and 18; HIGH is 3.
    expect(addresses(a)).toEqual(["127.0.0.2", "127.0.1.18", "127.0.1.22", "127.0.1.5", "127.0.2.3"]);
    expect(a.answer.every((r) => r.ttl === 300 && r.name === `${ipv4Name("198.51.100.2")}.`)).toBe(true);
  });

  test("SPAM gives 10, 11 and 12; MALWARE none; CRITICAL is 127.0.2.4", async () => {
    const a = await d.dig(ipv4Name("192.0.2.77"), "A", { tcp });
    expect(addresses(a)).toEqual(["127.0.0.2", "127.0.1.10", "127.0.1.11", "127.0.1.12", "127.0.1.14", "127.0.2.4"]);
  });

  test("the answer repeats the name exactly as asked (0x20 mixed case), and labels match whatever their case", async () => {
    const asked = "2.100.51.198.DnSbL.TeSt.ExAmPlE";
    const a = await d.dig(asked, "A", { tcp });
    expect(a.status).toBe("NOERROR");
    expect(a.question).toBe(`${asked}. IN A`);
    expect(new Set(a.answer.map((r) => r.name))).toEqual(new Set([`${asked}.`]));
  });

  test("TXT: one string starting with the level, score, reports and categories", async () => {
    const a = await d.dig(ipv4Name("198.51.100.2"), "TXT", { tcp });
    expect(a.status).toBe("NOERROR");
    expect(a.answer.map((r) => r.data)).toEqual(['"abuse-intel: HIGH, score 26, 2 reports (BRUTE_FORCE, SSH)"']);
  });

  test("ANY gives the A records (RFC 8482)", async () => {
    const a = await d.dig(ipv4Name("198.51.100.2"), "ANY", { tcp });
    expect(a.status).toBe("NOERROR");
    expect(a.answer.map((r) => r.type)).toEqual(["A", "A", "A", "A", "A"]);
  });

  test("another type for a listed name: NOERROR, no answer, the zone's SOA in the authority section", async () => {
    for (const type of ["AAAA", "MX"]) {
      const a = await d.dig(ipv4Name("198.51.100.2"), type, { tcp });
      expect(a.status).toBe("NOERROR");
      expect(a.flags).toContain("aa");
      expect(a.answer).toEqual([]);
      expect(a.authority.map((r) => [r.name, r.type])).toEqual([[`${TEST_ZONE}.`, "SOA"]]);
    }
  });

  test("below the level, never reported, or malformed inside the zone: NXDOMAIN with the SOA, its minimum the TTL", async () => {
    const names = [
      ipv4Name("198.51.100.3"), // MEDIUM, under the default HIGH
      ipv4Name("203.0.113.200"), // never reported
      `256.0.0.10.${TEST_ZONE}`,
      `01.0.0.10.${TEST_ZONE}`,
      `0.0.10.${TEST_ZONE}`,
      `x.2.100.51.198.${TEST_ZONE}`,
      `a.b.c.d.${TEST_ZONE}`,
      ipv6Name("2001:db8::5").replace(/^5/, "g"),
      `${"0.".repeat(31)}${TEST_ZONE}`,
    ];
    for (const name of names) {
      const a = await d.dig(name, "A", { tcp });
      expect({ name, status: a.status }).toEqual({ name, status: "NXDOMAIN" });
      expect(a.flags).toContain("aa");
      const soa = a.authority.find((r) => r.type === "SOA");
      expect(soa?.name).toBe(`${TEST_ZONE}.`);
      expect(soa?.data.split(" ").at(-1)).toBe("300");
    }
  });

  test("IPv6: the 32 nibbles in reverse order", async () => {
    const a = await d.dig(ipv6Name("2001:db8::5"), "A", { tcp });
    expect(a.status).toBe("NOERROR");
    expect(addresses(a)).toEqual(["127.0.0.2", "127.0.1.14", "127.0.1.4", "127.0.1.6", "127.0.2.3"]);
    expect((await d.dig(ipv6Name("2001:db8::6"), "A", { tcp })).status).toBe("NXDOMAIN");
  });

  test("the test points: 127.0.0.2 always listed (A 127.0.0.2 only, a TXT saying so), 127.0.0.1 never; also as IPv6", async () => {
    const listed = await d.dig(`2.0.0.127.${TEST_ZONE}`, "A", { tcp });
    expect(addresses(listed)).toEqual(["127.0.0.2"]);
    const txt = await d.dig(`2.0.0.127.${TEST_ZONE}`, "TXT", { tcp });
    expect(txt.answer[0].data).toContain("test point");
    expect((await d.dig(`1.0.0.127.${TEST_ZONE}`, "A", { tcp })).status).toBe("NXDOMAIN");
    expect(addresses(await d.dig(ipv6Name("::ffff:7f00:2"), "A", { tcp }))).toEqual(["127.0.0.2"]);
    expect((await d.dig(ipv6Name("::ffff:7f00:1"), "A", { tcp })).status).toBe("NXDOMAIN");
  });

  test("the apex: SOA (ns.ZONE, refresh 3600, retry 600, expire 86400, minimum the TTL), NS ns.ZONE, A ns.ZONE the listen address", async () => {
    const soa = await d.dig(TEST_ZONE, "SOA", { tcp });
    expect(soa.status).toBe("NOERROR");
    expect(soa.flags).toContain("aa");
    const [mname, rname, serial, ...timers] = soa.answer[0].data.split(" ");
    expect([mname, rname]).toEqual([`ns.${TEST_ZONE}.`, `hostmaster.${TEST_ZONE}.`]);
    expect(Number(serial)).toBeGreaterThan(0);
    expect(timers).toEqual(["3600", "600", "86400", "300"]);
    const ns = await d.dig(TEST_ZONE, "NS", { tcp });
    expect(ns.answer.map((r) => r.data)).toEqual([`ns.${TEST_ZONE}.`]);
    const a = await d.dig(`ns.${TEST_ZONE}`, "A", { tcp });
    expect(a.answer.map((r) => r.data)).toEqual(["127.0.0.1"]);
    const apexA = await d.dig(TEST_ZONE, "A", { tcp });
    expect(apexA.status).toBe("NOERROR");
    expect(apexA.answer).toEqual([]);
    expect(apexA.authority.map((r) => r.type)).toEqual(["SOA"]);
  });

  test("outside the zone: REFUSED, not authoritative, never forwarded", async () => {
    for (const name of ["example.com", `xdnsbl.test.example`, "test.example", "."]) {
      const a = await d.dig(name, "A", { tcp });
      expect({ name, status: a.status }).toEqual({ name, status: "REFUSED" });
      expect(a.flags).not.toContain("aa");
      expect(a.answer).toEqual([]);
    }
  });

  test("EDNS0: an OPT record back with payload 1232; none without EDNS", async () => {
    expect((await d.dig(ipv4Name("198.51.100.2"), "A", { tcp, edns: 4096 })).ednsUdp).toBe(1232);
    const plain = await d.dig(ipv4Name("198.51.100.2"), "A", { tcp, edns: false });
    expect(plain.status).toBe("NOERROR");
    expect(plain.ednsUdp).toBeNull();
  });

  test("an opcode other than QUERY: NOTIMP", async () => {
    const a = await d.dig(ipv4Name("198.51.100.2"), "A", { tcp, extra: ["+opcode=status"] });
    expect(a.status).toBe("NOTIMP");
  });
});

describe("consistency with the API (contract 17)", () => {
  test("a report that makes an address HIGH is listed by the next query after its 201; the SOA serial grew", async () => {
    const before = soaSerial(await d.dig(TEST_ZONE, "SOA"));
    await report(u1, "203.0.113.50", "SPAM");
    expect((await d.dig(ipv4Name("203.0.113.50"))).status).toBe("NXDOMAIN"); // MEDIUM
    await report(u2, "203.0.113.50", "SPAM");
    const a = await d.dig(ipv4Name("203.0.113.50"));
    expect(a.status).toBe("NOERROR");
    expect(addresses(a)).toContain("127.0.2.3");
    expect(soaSerial(await d.dig(TEST_ZONE, "SOA"))).toBeGreaterThan(before);
  });

  test("an allowlisted address leaves at once and comes back when the entry goes; the serial grows each time", async () => {
    const s0 = soaSerial(await d.dig(TEST_ZONE, "SOA"));
    const res = await d.harness.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: "198.51.100.0/24", note: "ours" } });
    expect(res.status).toBe(201);
    const gone = await d.dig(ipv4Name("198.51.100.2"), "A", { tcp: true });
    expect(gone.status).toBe("NXDOMAIN");
    const s1 = soaSerial(gone);
    expect(s1).toBeGreaterThan(s0);
    const removed = await d.harness.call("DELETE", `/v1/admin/allowlist/${encodeURIComponent("198.51.100.0/24")}`, { headers: admin.jwt });
    expect(removed.status).toBeLessThan(300);
    const back = await d.dig(ipv4Name("198.51.100.2"));
    expect(back.status).toBe("NOERROR");
    expect(soaSerial(await d.dig(TEST_ZONE, "SOA"))).toBeGreaterThan(s1);
  });

  test("a feed lists its network in DNS and in the blocklist together: the TXT names the feed; a replace takes it out of both", async () => {
    const feed = (body: string) =>
      d.harness.call("POST", "/v1/admin/feeds/drop-list?category=SPAM&severity=4&replace=true", { headers: { ...admin.jwt, "content-type": "text/plain" }, body });
    expect((await feed("10.9.0.0/16\n")).status).toBeLessThan(300);
    const blocklist = await bodyOf(await d.harness.call("GET", "/v1/ip/blocklist?riskLevel=HIGH", { headers: admin.apiKey }));
    expect(blocklist.data.ips).toContain("10.9.0.0/16");
    const a = await d.dig(ipv4Name("10.9.3.4"));
    expect(a.status).toBe("NOERROR");
    expect(addresses(a)).toEqual(["127.0.0.2", "127.0.1.10", "127.0.1.11", "127.0.1.12", "127.0.2.3"]);
    const txt = await d.dig(ipv4Name("10.9.3.4"), "TXT", { tcp: true });
    expect(txt.answer[0].data).toMatch(/^"abuse-intel: HIGH, score \d+, 1 report \(SPAM\), listed in feed drop-list"$/);
    expect((await feed("10.10.0.0/16\n")).status).toBeLessThan(300);
    expect((await d.dig(ipv4Name("10.9.3.4"))).status).toBe("NXDOMAIN");
    expect((await d.dig(ipv4Name("10.10.0.1"))).status).toBe("NOERROR");
    const after = await bodyOf(await d.harness.call("GET", "/v1/ip/blocklist?riskLevel=HIGH", { headers: admin.apiKey }));
    expect(after.data.ips).not.toContain("10.9.0.0/16");
    expect(after.data.ips).toContain("10.10.0.0/16");
  });
});

describe("time: decay, rescoring and retention", () => {
  test("a rescore that moves an address below the level takes it out and grows the serial; a report past retention stops counting at once", async () => {
    const t = await createDnsHarness();
    try {
      const h = t.harness;
      const [a, b] = await Promise.all([addUser(h, { tier: "enterprise" }), addUser(h, { tier: "enterprise" })]);
      for (const who of [a, b]) {
        const res = await h.call("POST", "/v1/ip/report", { headers: who.jwt, json: { ipAddress: "203.0.113.60", category: "SSH", description: "x", severity: 5 } });
        expect(res.status).toBe(201);
      }
      expect((await t.dig(ipv4Name("203.0.113.60"))).status).toBe("NOERROR");
      const serial = soaSerial(await t.dig(TEST_ZONE, "SOA"));
      // 60 days: two half-lives, the weights a quarter of what they were: no longer HIGH once rescored.
      h.clock.advance(60 * 86_400_000);
      await h.services.scheduler.runNow("rescore");
      expect((await t.dig(ipv4Name("203.0.113.60"))).status).toBe("NXDOMAIN");
      expect(soaSerial(await t.dig(TEST_ZONE, "SOA"))).toBeGreaterThan(serial);
      // A fresh pair of reports (by new users: the tokens above expired), then past retention (365 days) with no
      // job run: the next query already says no.
      for (const who of await Promise.all([addUser(h, { tier: "enterprise" }), addUser(h, { tier: "enterprise" })])) {
        const res = await h.call("POST", "/v1/ip/report", { headers: who.jwt, json: { ipAddress: "203.0.113.61", category: "SSH", description: "x", severity: 5 } });
        expect(res.status).toBe(201);
      }
      expect((await t.dig(ipv4Name("203.0.113.61"))).status).toBe("NOERROR");
      h.clock.advance(366 * 86_400_000);
      expect((await t.dig(ipv4Name("203.0.113.61"))).status).toBe("NXDOMAIN");
    } finally {
      await t.close();
    }
  });

  test("EDNS of a version other than 0: BADVERS", async () => {
    const a = await d.dig(ipv4Name("198.51.100.2"), "A", { extra: ["+edns=1", "+noednsnegotiation"] });
    expect(a.status).toBe("BADVERS");
  });
});

describe("--dns-risk-level, --dns-ttl", () => {
  test("MEDIUM lists what HIGH leaves out, with 127.0.2.2; the TTL is the option's", async () => {
    const medium = await createDnsHarness({ dnsRiskLevel: "MEDIUM", dnsTtl: 60 });
    try {
      const user = await addUser(medium.harness, { tier: "enterprise" });
      const res = await medium.harness.call("POST", "/v1/ip/report", { headers: user.jwt, json: { ipAddress: "198.51.100.3", category: "SPAM", description: "x", severity: 5 } });
      expect(res.status).toBe(201);
      const a = await medium.dig(ipv4Name("198.51.100.3"));
      expect(addresses(a)).toEqual(["127.0.0.2", "127.0.1.10", "127.0.1.11", "127.0.1.12", "127.0.2.2"]);
      expect(a.answer.every((r) => r.ttl === 60)).toBe(true);
      const nx = await medium.dig(ipv4Name("198.51.100.4"));
      expect(nx.authority[0].data.split(" ").at(-1)).toBe("60");
    } finally {
      await medium.close();
    }
  });
});
