import { describe, expect, test } from "bun:test";
import { type Cidr, cidrOf, formatIpv4, formatIpv6, parseCidr, tryParseCidr } from "../../../src/domain/ip";
import { PackedCidrs } from "../../../src/domain/packed-cidrs";
import { rng } from "../../support/random";

/** What a Cidr holds, as plain values (Uint32Array words as numbers). */
const plain = (c: Cidr) => ({ version: c.version, prefixLength: c.prefixLength, text: c.text, network: c.network.version === 4 ? c.network.value : [...c.network.words], networkText: c.network.text });

describe("PackedCidrs", () => {
  test("reads back every CIDR as the parser made it: IPv4 and IPv6, networks and single addresses, edges of the space", () => {
    const cidrs = ["0.0.0.0/1", "1.10.16.0/20", "5.188.10.179/32", "255.255.255.255/32", "2001:678:738::/48", "::/1", "2a06:e480::/29", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "::1/128"].map(parseCidr);
    const packed = PackedCidrs.pack(cidrs);
    expect(packed.length).toBe(cidrs.length);
    expect(Array.from({ length: packed.length }, (_, i) => plain(packed.at(i)!))).toEqual(cidrs.map(plain));
  });

  test("random networks of both families, and the same through words sent to another thread", () => {
    const next = rng(29);
    const cidrs: Cidr[] = [];
    for (let i = 0; i < 2000; i++) {
      if (i % 3 === 0) cidrs.push(cidrOf(parseCidr(`${formatIpv6([next(), next(), next(), next()])}/128`).network, next() % 129));
      else cidrs.push(cidrOf(parseCidr(`${formatIpv4(next())}/32`).network, next() % 33));
    }
    const packed = PackedCidrs.fromWords(structuredClone(PackedCidrs.pack(cidrs).words));
    const back = Array.from({ length: packed.length }, (_, i) => packed.at(i)!);
    expect(back.map(plain)).toEqual(cidrs.map(plain));
    // Each one reads as the text it shows.
    for (const c of back) expect(plain(tryParseCidr(c.text) as Cidr)).toEqual(plain(c));
  });

  test("at() outside the list is undefined, as an array's; words not a whole number of entries are refused", () => {
    const packed = PackedCidrs.pack([parseCidr("192.0.2.0/24")]);
    expect([packed.at(-1), packed.at(1), packed.at(0.5)]).toEqual([undefined, undefined, undefined]);
    expect(PackedCidrs.pack([]).length).toBe(0);
    expect(() => PackedCidrs.fromWords(new Uint32Array(7))).toThrow(RangeError);
  });
});
