// Address parsing and normalization (CONTRACT section 2): a table of accepted and refused forms, and the
// hand-written fast paths compared with ip-num on many random addresses.

import { describe, expect, test } from "bun:test";
import { IPv4, IPv6, Validator } from "ip-num";
import { collapseIPv6Number, expandIPv6Number } from "ip-num/dist/src/IPv6Utils";
import { AppError } from "../../../src/domain/errors";
import {
  IP_REJECTIONS,
  cidrContains,
  cidrOf,
  compareIp,
  firstAndLastOf,
  formatIpv4,
  formatIpv6,
  ipFromWords,
  ipv4FromNumber,
  parseCidr,
  parseIp,
  tryParseCidr,
  tryParseIp,
  tryParseIpv4Value,
  unreportableReason,
  type Ip,
} from "../../../src/domain/ip";
import { rng } from "../../support/random";

const wordsToBigInt = (w: ArrayLike<number>) => Array.from(w).reduce((acc, x) => (acc << 32n) | BigInt(x >>> 0), 0n);

describe("accepted forms and their normalized text", () => {
  const accepted: Array<[string, string, 4 | 6]> = [
    ["1.2.3.4", "1.2.3.4", 4],
    ["0.0.0.0", "0.0.0.0", 4],
    ["255.255.255.255", "255.255.255.255", 4],
    ["10.0.0.1", "10.0.0.1", 4],
    ["100.64.200.9", "100.64.200.9", 4],
    ["2001:db8::1", "2001:db8::1", 6],
    ["2001:DB8::1", "2001:db8::1", 6],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1", 6],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1", 6], // the first of two equal runs
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1", 6], // one zero group is not compressed
    ["1:0:0:2:0:0:0:3", "1:0:0:2::3", 6], // the longest run wins
    ["::", "::", 6],
    ["::1", "::1", 6],
    ["1::", "1::", 6],
    ["fe80::1", "fe80::1", 6],
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0", 6],
    ["::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8", 6],
    ["ff02::1", "ff02::1", 6],
    ["::ffff:1.2.3.4", "1.2.3.4", 4], // IPv4-mapped -> IPv4
    ["::FFFF:0102:0304", "1.2.3.4", 4],
    ["0:0:0:0:0:ffff:c000:0201", "192.0.2.1", 4],
    ["::1.2.3.4", "::102:304", 6], // IPv4-compatible (deprecated) stays IPv6
    ["64:ff9b::192.0.2.33", "64:ff9b::c000:221", 6],
  ];
  test.each(accepted)("%p -> %p", (input, text, version) => {
    const ip = tryParseIp(input);
    if (typeof ip === "string") throw new Error(`refused: ${ip}`);
    expect(ip.text as string).toBe(text);
    expect(ip.version).toBe(version);
    expect(parseIp(text).text as string).toBe(text); // the normalized form parses to itself
  });
});

describe("refused forms and the reason given", () => {
  const refused: Array<[string, string]> = [
    ["", IP_REJECTIONS.empty],
    ["010.0.0.1", IP_REJECTIONS.leadingZero],
    ["1.2.3.04", IP_REJECTIONS.leadingZero],
    ["00.1.2.3", IP_REJECTIONS.leadingZero],
    ["256.1.1.1", IP_REJECTIONS.octetRange],
    ["1.2.3.999", IP_REJECTIONS.octetRange],
    [" 1.2.3.4", IP_REJECTIONS.whitespace],
    ["1.2.3.4 ", IP_REJECTIONS.whitespace],
    ["1.2.3.4\n", IP_REJECTIONS.whitespace],
    ["\t::1", IP_REJECTIONS.whitespace],
    ["fe80::1%eth0", IP_REJECTIONS.zone],
    ["fe80::1%1", IP_REJECTIONS.zone],
    ["1.2.3.0/24", IP_REJECTIONS.cidr],
    ["2001:db8::/32", IP_REJECTIONS.cidr],
    ["1.2.3.4/32", IP_REJECTIONS.cidr],
    ["1.2.3", IP_REJECTIONS.notAnAddress],
    ["1.2.3.4.5", IP_REJECTIONS.notAnAddress],
    ["1..2.3", IP_REJECTIONS.notAnAddress],
    ["1.2.3.", IP_REJECTIONS.notAnAddress],
    ["+1.2.3.4", IP_REJECTIONS.notAnAddress],
    ["0x1.2.3.4", IP_REJECTIONS.notAnAddress],
    ["16909060", IP_REJECTIONS.notAnAddress],
    ["localhost", IP_REJECTIONS.notAnAddress],
    ["1.2.3.4:80", IP_REJECTIONS.notAnAddress],
    ["[::1]", IP_REJECTIONS.notAnAddress],
    [":::", IP_REJECTIONS.notAnAddress],
    ["1:::2", IP_REJECTIONS.notAnAddress],
    ["1::2::3", IP_REJECTIONS.notAnAddress],
    ["1:2:3:4:5:6:7:8:9", IP_REJECTIONS.notAnAddress],
    ["1:2:3:4:5:6:7", IP_REJECTIONS.notAnAddress],
    ["1:2:3:4:5:6:7:8::", IP_REJECTIONS.notAnAddress],
    ["12345::1", IP_REJECTIONS.notAnAddress],
    ["g::1", IP_REJECTIONS.notAnAddress],
    [":1::2", IP_REJECTIONS.notAnAddress],
    ["1::2:", IP_REJECTIONS.notAnAddress],
    ["::ffff:01.2.3.4", IP_REJECTIONS.leadingZero],
    ["::ffff:1.2.3.256", IP_REJECTIONS.octetRange],
    ["1:2:3:4:5:6:7:1.2.3.4", IP_REJECTIONS.notAnAddress],
    ["::1.2.3", IP_REJECTIONS.notAnAddress],
  ];
  test.each(refused)("%p is refused: %s", (input, reason) => {
    expect(tryParseIp(input)).toBe(reason);
    expect(tryParseIpv4Value(input)).toBe(-1);
    let thrown: unknown;
    try {
      parseIp(input);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).errorCode).toBe("bad_request");
    expect((thrown as AppError).message).toContain(reason);
  });
});

describe("normalization agrees with ip-num on random addresses", () => {
  test("IPv4: value and text of 20,000 random dotted quads", () => {
    const r = rng(1);
    for (let i = 0; i < 20000; i++) {
      const value = r();
      const reference = IPv4.fromNumber(value);
      const text = reference.toString();
      expect(tryParseIpv4Value(text)).toBe(value);
      expect(formatIpv4(value) as string).toBe(text);
      const ip = tryParseIp(text) as Ip;
      expect(ip.version === 4 && ip.value).toBe(Number(reference.getValue()));
    }
  });

  test("IPv6: value and RFC 5952 text of 20,000 random addresses in many spellings", () => {
    const r = rng(2);
    for (let i = 0; i < 20000; i++) {
      // Random words with zero groups sprinkled in, so that compression happens anywhere.
      const w = Uint32Array.from({ length: 4 }, () => {
        const x = r();
        const shape = r() % 4;
        return shape === 0 ? 0 : shape === 1 ? x & 0xffff : shape === 2 ? x & 0xffff0000 : x;
      });
      if (w[0] === 0 && w[1] === 0 && w[2] === 0xffff) w[2] = 0xfffe; // the mapped range has its own test
      const reference = IPv6.fromBigInt(wordsToBigInt(w));
      const expanded = expandIPv6Number(reference.toString()); // all eight groups of four digits
      const expected = collapseIPv6Number(expanded);
      const groups = expanded.split(":").map((g) => g.replace(/^0+(?=.)/, ""));
      const spellings = [
        expanded,
        expected,
        expected.toUpperCase(),
        groups.join(":"),
        groups.map((g, j) => (j % 2 === 0 ? g.toUpperCase() : g.padStart(3, "0"))).join(":"),
      ];
      for (const spelling of spellings) {
        const ip = tryParseIp(spelling);
        if (typeof ip === "string") throw new Error(`${spelling} refused: ${ip}`);
        expect(ip.version).toBe(6);
        if (ip.version === 6) expect(wordsToBigInt(ip.words)).toBe(reference.getValue());
        expect(ip.text as string).toBe(expected);
      }
      expect(formatIpv6(w) as string).toBe(expected);
    }
  });

  test("IPv4-mapped IPv6 addresses become the IPv4 address ip-num finds in the low 32 bits", () => {
    const r = rng(3);
    for (let i = 0; i < 2000; i++) {
      const v4 = IPv4.fromNumber(r());
      const mapped = IPv6.fromIPv4(v4);
      for (const spelling of [`::ffff:${v4.toString()}`, mapped.toString(), expandIPv6Number(mapped.toString())]) {
        const ip = tryParseIp(spelling);
        expect(ip).toEqual({ version: 4, value: Number(v4.getValue()), text: v4.toString() as never });
      }
    }
  });

  test("near-misses: 60,000 addresses with one character inserted, dropped or replaced are accepted exactly when ip-num accepts them, with its value", () => {
    const r = rng(4);
    const alphabet = "0123456789abcdefABCDEF:.";
    let accepted = 0;
    for (let i = 0; i < 60000; i++) {
      const words = [r(), r(), r(), r()].map((x) => (r() % 3 === 0 ? 0 : x));
      let s =
        i % 5 === 0 ? `::ffff:${formatIpv4(r())}` : i % 7 === 0 ? (formatIpv4(r()) as string) : (formatIpv6(words) as string);
      const at = r() % (s.length + 1);
      const c = alphabet[r() % alphabet.length];
      const edit = r() % 4; // 3 leaves it as it is
      if (edit === 0) s = s.slice(0, at) + c + s.slice(at);
      else if (edit === 1) s = s.slice(0, at) + s.slice(at + 1);
      else if (edit === 2) s = s.slice(0, at) + c + s.slice(at + 1);
      const ours = tryParseIp(s);
      const v4 = Validator.isValidIPv4String(s)[0];
      const v6 = Validator.isValidIPv6String(s)[0];
      if (typeof ours === "string") {
        if (v4 || v6) throw new Error(`${s} refused (${ours}) but ip-num accepts it`);
        continue;
      }
      accepted++;
      if (!v4 && !v6) throw new Error(`${s} accepted but ip-num refuses it`);
      const value = v4 ? IPv4.fromString(s).getValue() : IPv6.fromString(s).getValue();
      const expected = v4 || ours.version === 6 ? value : value & 0xffffffffn; // a mapped address is its low 32 bits
      expect(ours.version === 4 ? BigInt(ours.value) : wordsToBigInt(ours.words)).toBe(expected);
    }
    expect(accepted).toBeGreaterThan(20000);
  });
});

describe("networks", () => {
  const accepted: Array<[string, string, number]> = [
    ["10.0.0.0/8", "10.0.0.0/8", 8],
    ["0.0.0.0/0", "0.0.0.0/0", 0],
    ["1.2.3.4/32", "1.2.3.4/32", 32],
    ["1.2.3.4", "1.2.3.4/32", 32],
    ["2001:DB8::/32", "2001:db8::/32", 32],
    ["::/0", "::/0", 0],
    ["2001:db8::1", "2001:db8::1/128", 128],
    ["::ffff:10.0.0.0/104", "10.0.0.0/8", 8],
    ["::ffff:0:0/96", "0.0.0.0/0", 0],
  ];
  test.each(accepted)("%p -> %p", (input, text, prefixLength) => {
    const cidr = tryParseCidr(input);
    if (typeof cidr === "string") throw new Error(`refused: ${cidr}`);
    expect(cidr.text).toBe(text);
    expect(cidr.prefixLength).toBe(prefixLength);
    expect(parseCidr(text).text).toBe(text);
  });

  const refused: Array<[string, RegExp]> = [
    ["10.0.0.1/8", /host bits .*10\.0\.0\.0\/8/],
    ["2001:db8::1/32", /host bits .*2001:db8::\/32/],
    ["::ffff:0:0/95", /host bits/],
    ["10.0.0.0/33", /0 to 32/],
    ["10.0.0.0/08", /0 to 32/],
    ["10.0.0.0/", /0 to 32/],
    ["10.0.0.0/-1", /0 to 32/],
    ["::/129", /0 to 128/],
    ["010.0.0.0/8", /leading zeros/],
    ["10.0.0.0/8 ", /whitespace/],
    ["fe80::%eth0/64", /zone/],
    ["10.0.0.0/8/9", /0 to 32/],
    ["foo/8", /not an IPv4 or IPv6 address/],
  ];
  test.each(refused)("%p is refused", (input, reason) => {
    const result = tryParseCidr(input);
    expect(typeof result).toBe("string");
    expect(result as string).toMatch(reason);
    expect(() => parseCidr(input)).toThrow(AppError);
  });

  test("cidrOf, firstAndLastOf and cidrContains agree with ip-num's ranges", () => {
    const r = rng(4);
    for (let i = 0; i < 2000; i++) {
      const v4 = ipv4FromNumber(r());
      const len4 = r() % 33;
      const net4 = cidrOf(v4, len4);
      const { first, last } = firstAndLastOf(net4);
      const span = 2 ** (32 - len4);
      expect(first.version === 4 && first.value).toBe(Math.floor(v4.value / span) * span);
      expect(last.version === 4 && last.value).toBe(Math.floor(v4.value / span) * span + span - 1);
      expect(cidrContains(net4, v4)).toBe(true);
      expect(cidrContains(net4, ipv4FromNumber((last.version === 4 ? last.value + 1 : 0) % 2 ** 32))).toBe(len4 === 0);

      const v6 = ipFromWords([0x20010db8, r(), r(), r()]);
      const len6 = r() % 129;
      const net6 = cidrOf(v6, len6);
      const bounds = firstAndLastOf(net6);
      const value = v6.version === 6 ? wordsToBigInt(v6.words) : 0n;
      const size = 1n << BigInt(128 - len6);
      expect(bounds.first.version === 6 && wordsToBigInt(bounds.first.words)).toBe((value / size) * size);
      expect(bounds.last.version === 6 && wordsToBigInt(bounds.last.words)).toBe((value / size) * size + size - 1n);
      expect(cidrContains(net6, v6)).toBe(true);
      expect(cidrContains(net6, v4)).toBe(false);
      expect(parseCidr(net6.text).text).toBe(net6.text);
    }
  });

  test("compareIp orders IPv4 before IPv6, then numerically", () => {
    const texts = ["::1", "10.0.0.1", "2001:db8::1", "9.255.255.255", "2001:db8::", "255.255.255.255", "::"];
    const sorted = texts.map(parseIp).sort(compareIp).map((ip) => ip.text);
    expect(sorted as string[]).toEqual(["9.255.255.255", "10.0.0.1", "255.255.255.255", "::", "::1", "2001:db8::", "2001:db8::1"]);
  });
});

describe("reportability (contract section 2)", () => {
  const cases: Array<[string, RegExp | null]> = [
    ["0.0.0.0", /unspecified/],
    ["::", /unspecified/],
    ["127.0.0.1", /loopback/],
    ["127.255.255.254", /loopback/],
    ["::1", /loopback/],
    ["::ffff:127.0.0.1", /loopback/], // mapped to IPv4 first
    ["224.0.0.1", /multicast/],
    ["239.255.255.255", /multicast/],
    ["ff02::1", /multicast/],
    ["ff00::", /multicast/],
    ["255.255.255.255", /broadcast/],
    ["240.0.0.1", /reserved/],
    ["254.1.2.3", /reserved/],
    // Private, link-local and shared space is reportable: on-prem networks are private.
    ["10.0.0.1", null],
    ["192.168.1.1", null],
    ["172.16.5.4", null],
    ["169.254.1.1", null],
    ["100.64.0.1", null],
    ["fe80::1", null],
    ["fd00::1", null],
    ["0.0.0.1", null],
    ["126.255.255.255", null],
    ["128.0.0.0", null],
    ["223.255.255.255", null],
    ["2001:db8::1", null],
    ["::2", null],
    ["feff::1", null],
  ];
  test.each(cases)("%p", (text, reason) => {
    const result = unreportableReason(parseIp(text));
    if (reason === null) expect(result).toBeNull();
    else expect(result ?? "").toMatch(reason);
  });
});
