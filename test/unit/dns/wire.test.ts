// Our DNS codec against dns-packet, a maintained reader and writer: every query dns-packet encodes (random names
// in mixed case, types, ids, EDNS payload sizes) reads back the same, and every answer the responder writes
// decodes with dns-packet to the question asked and the records the zone's rules give.

import { describe, expect, test, setDefaultTimeout } from "bun:test";
import dnsPacket from "dns-packet";
import fc from "fast-check";
import { maskOf } from "../../../src/domain/categories";
import { ManualClock } from "../../../src/domain/clock";
import { wireName } from "../../../src/domain/dnsbl/names";
import { parseIp } from "../../../src/domain/ip";
import { DnsblResponder } from "../../../src/dns/responder";
import { QueryReader, ReadOutcome } from "../../../src/dns/wire";
import { CidrSet } from "../../../src/index/cidr-set";
import { ReputationIndex } from "../../../src/index/reputation-index";
import type { Allowlist } from "../../../src/services/allowlist/allowlist";

// Hundreds of generated cases: room for a loaded machine (bun's default is 5 s).
setDefaultTimeout(30_000);

type Decoded = dnsPacket.DecodedPacket & { rcode: string; flag_aa: boolean; flag_tc: boolean; flag_qr: boolean };
const decode = (bytes: Uint8Array) => dnsPacket.decode(Buffer.from(bytes)) as Decoded;

const label = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
const name = fc.array(label, { minLength: 1, maxLength: 8 }).map((labels) => labels.join("."));
const TYPES = ["A", "TXT", "AAAA", "SOA", "NS", "MX", "ANY", "PTR", "CNAME"] as dnsPacket.RecordType[];
const TYPE_CODES: Record<string, number> = { A: 1, NS: 2, CNAME: 5, SOA: 6, PTR: 12, MX: 15, TXT: 16, AAAA: 28, ANY: 255 };

function encodeQuery(q: { name: string; type: dnsPacket.RecordType; id: number; edns: number | null }): Uint8Array {
  return Uint8Array.from(
    dnsPacket.encode({
      type: "query",
      id: q.id,
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ type: q.type, name: q.name, class: "IN" }],
      additionals: q.edns === null ? [] : [{ type: "OPT", name: ".", udpPayloadSize: q.edns }],
    } as dnsPacket.Packet),
  );
}

describe("QueryReader reads what dns-packet writes", () => {
  test("names (case kept and lowercased), types, ids and EDNS sizes", () => {
    const reader = new QueryReader();
    fc.assert(
      fc.property(
        fc.record({ name, type: fc.constantFrom(...TYPES), id: fc.integer({ min: 0, max: 65535 }), edns: fc.option(fc.integer({ min: 1, max: 65535 })) }),
        (q) => {
          const packet = encodeQuery(q);
          expect(reader.read(packet, packet.length)).toBe(ReadOutcome.Query);
          expect(reader.id).toBe(q.id);
          expect(reader.qtype).toBe(TYPE_CODES[q.type]);
          expect(reader.classIn).toBe(true);
          expect(reader.questionText()).toBe(`${q.name}.`);
          expect(Array.from(reader.lowerName.subarray(0, reader.nameLength))).toEqual(Array.from(wireName(q.name)));
          expect(reader.ednsPayload).toBe(q.edns === null ? 0 : Math.max(512, q.edns));
        },
      ),
      { numRuns: 500 },
    );
  });

  test("a compressed question name (a pointer back into the header's bytes) is followed, not refused", () => {
    const reader = new QueryReader();
    // "a" and then a pointer to offset 6, the header's ANCOUNT (0): a zero byte there is the root.
    const packet = Uint8Array.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 0xc0, 6, 0, 1, 0, 1]);
    expect(reader.read(packet, packet.length)).toBe(ReadOutcome.Query);
    expect(reader.questionText()).toBe("a.");
  });
});

describe("the responder's answers decode with dns-packet", () => {
  const ZONE = "bl.example";
  const index = new ReputationIndex();
  const now = Date.parse("2026-11-21T08:00:00.000Z");
  index.upsert(parseIp("192.0.2.1"), { reputationScore: 30, totalReports: 4, verifiedReports: 0, categoriesMask: maskOf(["SSH", "SPAM"]), lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now });
  index.upsert(parseIp("2001:db8::7"), { reputationScore: 5, totalReports: 9, verifiedReports: 1, categoriesMask: maskOf(["DDOS"]), lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now });
  // The allowlist's set is what the responder reads; its changes are not part of this test.
  const allowlist = { set: new CidrSet(), onChange: () => {} } as unknown as Allowlist;
  const responder = new DnsblResponder({ zone: ZONE, ttl: 120, riskLevel: "HIGH", nameServerV4: null }, new ManualClock(now));
  responder.setSource({ index, allowlist, expireDue: () => {}, networksAround: () => [] });

  const ask = (q: { name: string; type: dnsPacket.RecordType; id: number; edns: number | null }, udp = true) => {
    const packet = encodeQuery(q);
    const n = responder.respond(packet, packet.length, udp);
    return decode(responder.buffer.subarray(2, 2 + n));
  };
  const names = fc.constantFrom(`1.2.0.192.${ZONE}`, `1.2.0.192.BL.Example`, `7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.${ZONE}`, `2.2.0.192.${ZONE}`, ZONE, `ns.${ZONE}`, "example.com", `2.0.0.127.${ZONE}`);

  test("every answer: the question as asked, QR set, records of the kinds the rules give", () => {
    fc.assert(
      fc.property(fc.record({ name: names, type: fc.constantFrom(...TYPES), id: fc.integer({ min: 0, max: 65535 }), edns: fc.option(fc.constantFrom(512, 1232, 4096)) }), fc.boolean(), (q, udp) => {
        const a = ask(q, udp);
        expect(a.id).toBe(q.id);
        expect(a.flag_qr).toBe(true);
        expect(a.questions).toEqual([{ name: q.name, type: q.type, class: "IN" }]);
        expect((a.additionals ?? []).map((r) => r.type)).toEqual(q.edns === null ? [] : ["OPT"]);
        if (a.rcode === "REFUSED") expect(q.name).toBe("example.com");
        for (const r of a.answers ?? []) expect(r.name).toBe(q.name);
        for (const r of a.authorities ?? []) expect([r.type, r.name.toLowerCase()]).toEqual(["SOA", ZONE.toLowerCase()]);
      }),
      { numRuns: 400 },
    );
  });

  test("a listed address: its A records and TXT as dns-packet reads them", () => {
    const a = ask({ name: `1.2.0.192.${ZONE}`, type: "A", id: 1, edns: null });
    expect([a.rcode, a.flag_aa]).toEqual(["NOERROR", true]);
    expect((a.answers ?? []).map((r) => [r.type, (r as { ttl: number }).ttl, (r as { data: unknown }).data])).toEqual([
      ["A", 120, "127.0.0.2"],
      ["A", 120, "127.0.1.10"],
      ["A", 120, "127.0.1.11"],
      ["A", 120, "127.0.1.12"],
      ["A", 120, "127.0.1.22"],
      ["A", 120, "127.0.2.3"],
    ]);
    const txt = ask({ name: `1.2.0.192.${ZONE}`, type: "TXT", id: 2, edns: null });
    expect(((txt.answers ?? [])[0] as { data: Buffer[] }).data.map(String)).toEqual(["abuse-intel: HIGH, score 30, 4 reports (SPAM, SSH)"]);
    const soa = ask({ name: ZONE, type: "SOA", id: 3, edns: null });
    expect((soa.answers ?? [])[0]).toMatchObject({ type: "SOA", data: { mname: `ns.${ZONE}`, rname: `hostmaster.${ZONE}`, refresh: 3600, retry: 600, expire: 86400, minimum: 120 } });
    const nx = ask({ name: `2.2.0.192.${ZONE}`, type: "A", id: 4, edns: null });
    expect(nx.rcode).toBe("NXDOMAIN");
    // Listening on every address (no specific IPv4 one): ns.ZONE has no A record, the name still exists.
    const ns = ask({ name: `ns.${ZONE}`, type: "A", id: 5, edns: null });
    expect([ns.rcode, ns.answers?.length, ns.authorities?.[0].type]).toEqual(["NOERROR", 0, "SOA"]);
    const any = ask({ name: ZONE, type: "ANY" as dnsPacket.RecordType, id: 6, edns: null });
    expect((any.answers ?? []).map((r) => r.type)).toEqual(["SOA", "NS"]);
    const chaos = Uint8Array.from(dnsPacket.encode({ type: "query", id: 7, questions: [{ type: "TXT", name: `1.2.0.192.${ZONE}`, class: "CH" }] } as dnsPacket.Packet));
    const n = responder.respond(chaos, chaos.length, true);
    expect(decode(responder.buffer.subarray(2, 2 + n)).rcode).toBe("REFUSED");
  });
});
