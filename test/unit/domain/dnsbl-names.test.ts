// The DNSBL zone's names (contract 17, RFC 5782 2.1 and 2.4), by table: which address a name asks about, and
// which names are the apex, the name server, malformed inside the zone, or outside it.

import { describe, expect, test } from "bun:test";
import { classifyName, NameKind, wireName } from "../../../src/domain/dnsbl/names";

const ZONE = wireName("dnsbl.example.org");

function classify(dotted: string): { kind: NameKind; words: number[] } {
  const name = wireName(dotted);
  const out = new Uint32Array(4);
  const kind = classifyName(name, name.length, ZONE, out);
  return { kind, words: Array.from(out) };
}

describe("classifyName", () => {
  const cases: [string, NameKind, number[] | null][] = [
    ["dnsbl.example.org", NameKind.Apex, null],
    ["ns.dnsbl.example.org", NameKind.NameServer, null],
    ["7.113.0.203.dnsbl.example.org", NameKind.Ipv4, [0xcb007107]],
    ["0.0.0.0.dnsbl.example.org", NameKind.Ipv4, [0]],
    ["255.255.255.255.dnsbl.example.org", NameKind.Ipv4, [0xffffffff]],
    ["2.0.0.127.dnsbl.example.org", NameKind.Ipv4, [0x7f000002]],
    // RFC 5782 2.4's example: 2001:db8::1
    ["1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.dnsbl.example.org", NameKind.Ipv6, [0x20010db8, 0, 0, 1]],
    ["f.e.d.c.b.a.9.8.7.6.5.4.3.2.1.0.f.e.d.c.b.a.9.8.7.6.5.4.3.2.1.0.dnsbl.example.org", NameKind.Ipv6, [0x01234567, 0x89abcdef, 0x01234567, 0x89abcdef]],
    ["256.0.0.10.dnsbl.example.org", NameKind.Malformed, null],
    ["01.0.0.10.dnsbl.example.org", NameKind.Malformed, null],
    ["1000.0.0.10.dnsbl.example.org", NameKind.Malformed, null],
    ["-1.0.0.10.dnsbl.example.org", NameKind.Malformed, null],
    ["0.0.10.dnsbl.example.org", NameKind.Malformed, null],
    ["1.0.0.0.10.dnsbl.example.org", NameKind.Malformed, null],
    ["a.b.c.d.dnsbl.example.org", NameKind.Malformed, null],
    ["ns2.dnsbl.example.org", NameKind.Malformed, null],
    ["www.dnsbl.example.org", NameKind.Malformed, null],
    [`${"1.".repeat(31)}g.dnsbl.example.org`, NameKind.Malformed, null],
    [`${"1.".repeat(31)}10.dnsbl.example.org`, NameKind.Malformed, null],
    [`${"1.".repeat(31)}dnsbl.example.org`, NameKind.Malformed, null],
    [`${"1.".repeat(40)}dnsbl.example.org`, NameKind.Malformed, null],
    ["example.org", NameKind.Outside, null],
    ["org", NameKind.Outside, null],
    ["xdnsbl.example.org", NameKind.Outside, null],
    ["1.0.0.10.xdnsbl.example.org", NameKind.Outside, null],
    ["dnsbl.example.org.evil", NameKind.Outside, null],
    ["", NameKind.Outside, null],
  ];
  test.each(cases)("%s", (name, kind, words) => {
    const got = classify(name);
    expect(got.kind).toBe(kind);
    if (words !== null) expect(got.words.slice(0, words.length)).toEqual(words);
  });

  test("a label holding the zone's bytes across a boundary is not under the zone", () => {
    // One label "a\x05dnsbl\x07example\x03org" would end with the zone's bytes if boundaries were not checked.
    const tail = Array.from(ZONE.subarray(0, ZONE.length - 1));
    const name = Uint8Array.from([tail.length + 1, 0x61, ...tail, 0]);
    expect(classifyName(name, name.length, ZONE, new Uint32Array(4))).toBe(NameKind.Outside);
  });
});

describe("wireName", () => {
  test("lowercases, drops a final dot, refuses empty and long labels", () => {
    expect(Array.from(wireName("A.Bc."))).toEqual([1, 0x61, 2, 0x62, 0x63, 0]);
    expect(() => wireName("a..b")).toThrow();
    expect(() => wireName(`${"x".repeat(64)}.org`)).toThrow();
  });
});
