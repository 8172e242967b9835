// The branch-free dotted-quad readers (tryParseIpv4Value in ip.ts, dottedQuadAt in bulk-inputs.ts) and tryParseIp
// against a plain regular-expression reference on systematic inputs: every octet token of up to four digits in
// each position, odd characters, embedded IPv4 in IPv6.

import { describe, expect, test } from "bun:test";
import { tryParseIp, tryParseIpv4Value } from "../../../src/domain/ip";
import { BulkInputs, scanBulkBody } from "../../../src/domain/bulk-inputs";

function refV4(s: string): number {
  const m = /^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$/.exec(s);
  if (!m) return -1;
  const o = m.slice(1).map(Number);
  if (o.some((x) => x > 255)) return -1;
  return ((o[0] * 256 + o[1]) * 256 + o[2]) * 256 + o[3];
}

// Every octet token of 0-4 characters from digits, plus a few odd characters.
const tokens: string[] = [""];
for (let len = 1; len <= 4; len++) for (let v = 0; v < 10 ** len; v++) tokens.push(String(v).padStart(len, "0"));
tokens.push("a", "-1", "+1", " 1", "1 ", "\u0661", "\uff11", "\u0000", "\ud800", "1\u0000", "0x1", "1e2", "1.", ".1");
const fillers = ["0", "9", "10", "99", "100", "255", "256", "01", "1000"];

const bytes = (t: string) => new TextEncoder().encode(t);
function bulkView(body: string) {
  const inputs = scanBulkBody(bytes(body)) ?? BulkInputs.of((JSON.parse(body) as { ips: unknown[] }).ips);
  return Array.from({ length: inputs.count }, (_, i) => (inputs.ipv4[i] >= 0 ? inputs.ipv4[i] : inputs.others[i]));
}

describe("dotted quads, one octet position at a time, every 0-4 digit token", () => {
  for (let pos = 0; pos < 4; pos++) {
    test(`position ${pos}`, () => {
      const bad: string[] = [];
      for (const f of fillers) {
        for (const t of tokens) {
          const parts = [f, f, f, f];
          parts[pos] = t;
          const s = parts.join(".");
          const want = refV4(s);
          if (tryParseIpv4Value(s) !== want) bad.push(`tryParseIpv4Value(${JSON.stringify(s)})`);
          const ip = tryParseIp(s);
          const got = typeof ip === "string" ? -1 : ip.version === 4 ? ip.value : -2;
          if (got !== want) bad.push(`tryParseIp(${JSON.stringify(s)})`);
          // the bulk scanner (or its JSON fallback) must give the number exactly when the reference does
          const b = bulkView(JSON.stringify({ ips: [s, s + "x", "x" + s] }));
          if (b[0] !== (want >= 0 ? want : s) || b[1] !== s + "x" || b[2] !== "x" + s) bad.push(`bulk(${JSON.stringify(s)}) -> ${JSON.stringify(b)}`);
        }
      }
      expect(bad.slice(0, 20)).toEqual([]);
    });
  }
});

describe("odd spellings", () => {
  const cases = [
    "1.2.3.4.", ".1.2.3.4", "1..2.3.4", "1.2.3.4.5", "1.2.3", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4\n", "1.2.3.4\u0000", "\u00001.2.3.4",
    "1.2.3.4/32", "1.2.3.4:80", "1.2.3.4x", "1.2.3.４", "1.2.3.\u0664", "1.2.3.4\ud800", "\udc001.2.3.4", "1.2.3.4".repeat(1000).slice(0, 7000),
    "111.222.233.244", "255.255.255.255", "255.255.255.256", "0.0.0.0", "00.0.0.0", "1.1.1.1111", "1111.1.1.1",
  ];
  test.each(cases.map((c) => [c.length > 40 ? `${c.slice(0, 20)}… (${c.length} chars)` : JSON.stringify(c), c]))("%s", (_name, s) => {
    const want = refV4(s);
    expect(tryParseIpv4Value(s)).toBe(want);
    const b = bulkView(JSON.stringify({ ips: [s] }));
    expect(b[0]).toBe(want >= 0 ? want : s);
  });
});

describe("IPv4-embedded IPv6", () => {
  const cases: [string, string | null][] = [
    ["::ffff:1.2.3.4", "1.2.3.4"],
    ["::FFFF:1.2.3.4", "1.2.3.4"],
    ["0:0:0:0:0:ffff:1.2.3.4", "1.2.3.4"],
    ["::ffff:0102:0304", "1.2.3.4"],
    ["64:ff9b::1.2.3.4", "64:ff9b::102:304"],
    ["::1.2.3.4", "::102:304"],
    ["::ffff:1.2.3.04", null],
    ["::ffff:1.2.3.256", null],
    ["::ffff:1.2.3", null],
    ["::ffff:1.2.3.4.5", null],
    ["::ffff:1.2.3.4:1", null],
    ["1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"],
    ["1:2:3:4:5:6:7:1.2.3.4", null],
    ["1:2:3:4:5::1.2.3.4", "1:2:3:4:5:0:102:304"],
    ["1:2:3:4:5:6::1.2.3.4", null],
    ["::ffff:255.255.255.255", "255.255.255.255"],
    ["0000:0000:0000:0000:0000:ffff:255.255.255.255", "255.255.255.255"],
  ];
  test.each(cases)("%p -> %p", (s, want) => {
    const ip = tryParseIp(s);
    expect(typeof ip === "string" ? null : (ip.text as string)).toBe(want);
  });
});

test("random strings over digits and dots (200k) agree with the reference", () => {
  let seed = 12345;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8);
  const alphabet = "0123456789012345678901234567890123456789....";
  const bad: string[] = [];
  for (let k = 0; k < 200_000; k++) {
    const len = 5 + (next() % 13);
    let s = "";
    for (let c = 0; c < len; c++) s += alphabet[next() % alphabet.length];
    const want = refV4(s);
    if (tryParseIpv4Value(s) !== want) bad.push(s);
    const b = bulkView(`{"ips":["${s}"]}`);
    if (b[0] !== (want >= 0 ? want : s)) bad.push(`bulk ${s}`);
  }
  expect(bad.slice(0, 20)).toEqual([]);
});
