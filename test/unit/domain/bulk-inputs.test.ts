// The bulk check's body reader (bulk-inputs.ts): the byte scanner must give exactly what JSON.parse and
// BulkInputs.of give, or step aside (null) for JSON.parse to decide.

import { describe, expect, test } from "bun:test";
import { BulkInputs, scanBulkBody } from "../../../src/domain/bulk-inputs";
import { rng } from "../../support/random";

const bytes = (text: string) => new TextEncoder().encode(text);
const view = (inputs: BulkInputs | null) =>
  inputs === null ? null : Array.from({ length: inputs.count }, (_, i) => (inputs.ipv4[i] >= 0 ? inputs.ipv4[i] : { other: inputs.others[i] }));
const viaJson = (text: string) => view(BulkInputs.of((JSON.parse(text) as { ips: unknown[] }).ips));

describe("scanBulkBody reads the common body", () => {
  test.each([
    ['{"ips":["192.0.2.1"]}', [0xc0000201]],
    ['{"ips":["0.0.0.0","255.255.255.255"]}', [0, 0xffffffff]],
    [' \n{ "ips" :\t[ "10.0.0.1" , "2001:db8::1" ] }\r\n', [0x0a000001, { other: "2001:db8::1" }]],
    ['{"ips":[]}', []],
    ['{"ips":[""]}', [{ other: "" }]],
  ])("%s", (body, expected) => {
    expect(view(scanBulkBody(bytes(body)))).toEqual(expected as never);
    expect(viaJson(body)).toEqual(expected as never);
  });

  test.each([
    ["a leading zero", "01.2.3.4"],
    ["an octet over 255", "256.1.1.1"],
    ["three octets", "1.2.3"],
    ["five octets", "1.2.3.4.5"],
    ["an empty octet", "1..2.3"],
    ["a trailing dot", "1.2.3.4."],
    ["a leading space", " 1.2.3.4"],
    ["CIDR", "1.2.3.0/24"],
    ["a letter", "1.2.3.a"],
    ["a long octet", "1.2.3.0004"],
  ])("%s (%s) is not a dotted quad: kept as text", (_what, text) => {
    const body = JSON.stringify({ ips: [text] });
    expect(view(scanBulkBody(bytes(body)))).toEqual([{ other: text }]);
    expect(viaJson(body)).toEqual([{ other: text }]);
  });
});

describe("scanBulkBody leaves every other body to JSON.parse", () => {
  test.each([
    ["an escape", '{"ips":["1.2.3.4\\u0030"]}'],
    ["an escaped quote", '{"ips":["a\\"b"]}'],
    ["a non-string", '{"ips":[1]}'],
    ["null", '{"ips":[null]}'],
    ["a nested array", '{"ips":[["1.2.3.4"]]}'],
    ["another key first", '{"x":1,"ips":["1.2.3.4"]}'],
    ["another key after", '{"ips":["1.2.3.4"],"x":1}'],
    ["a duplicate key", '{"ips":["1.2.3.4"],"ips":["5.6.7.8"]}'],
    ["ips not an array", '{"ips":"1.2.3.4"}'],
    ["a trailing comma", '{"ips":["1.2.3.4",]}'],
    ["a missing comma", '{"ips":["1.2.3.4" "5.6.7.8"]}'],
    ["an unterminated string", '{"ips":["1.2.3.4'],
    ["an unclosed array", '{"ips":["1.2.3.4"'],
    ["an unclosed object", '{"ips":["1.2.3.4"]'],
    ["trailing text", '{"ips":["1.2.3.4"]}x'],
    ["two objects", '{"ips":[]}{}'],
    ["a non-ASCII character", '{"ips":["1.2.3.4é"]}'],
    ["a control character", '{"ips":["1.2.3.4\t"]}'],
    ["a top-level array", '["1.2.3.4"]'],
    ["a differently spelt key", '{"IPS":["1.2.3.4"]}'],
    ["an empty body", ""],
  ])("%s", (_what, body) => {
    expect(scanBulkBody(bytes(body))).toBeNull();
  });
});

describe("the scanner agrees with JSON.parse on random bodies", () => {
  const next = rng(0xb01c);
  const pick = <T>(items: readonly T[]): T => items[next() % items.length]!;
  const texts = ["1.2.3.4", "0.0.0.0", "255.255.255.255", "10.20.30.40", "01.2.3.4", "256.0.0.1", "1.2.3", "::1", "2001:db8::7", "", "x", "1.2.3.4 ", "9.9.9.9/32"];
  const space = ["", " ", "\n", "\t", "\r\n", "  "];
  const randomQuad = () => [next() & 255, next() & 255, next() & 255, next() & 255].join(".");

  function randomBody(): string {
    const items = Array.from({ length: next() % 8 }, () => `${pick(space)}${JSON.stringify(next() % 3 === 0 ? randomQuad() : pick(texts))}${pick(space)}`);
    return `${pick(space)}{${pick(space)}"ips"${pick(space)}:${pick(space)}[${items.join(",") || pick(space)}]${pick(space)}}${pick(space)}`;
  }

  test("well-formed bodies: the same inputs", () => {
    for (let i = 0; i < 5_000; i++) {
      const body = randomBody();
      expect({ body, inputs: view(scanBulkBody(bytes(body))) }).toEqual({ body, inputs: viaJson(body) });
    }
  });

  test("bodies with a byte changed: null, or what JSON.parse gives", () => {
    let scanned = 0;
    for (let i = 0; i < 20_000; i++) {
      const body = bytes(randomBody());
      body[next() % body.length] = pick([0x22, 0x2c, 0x5b, 0x5d, 0x7b, 0x7d, 0x5c, 0x2e, 0x30, 0x39, 0x3a, 0x20, 0x61, 0x00, 0xc3]);
      const inputs = scanBulkBody(body);
      if (inputs === null) continue;
      scanned++;
      const text = new TextDecoder().decode(body);
      expect({ text, inputs: view(inputs) }).toEqual({ text, inputs: viaJson(text) });
    }
    // Most changes leave a body the scanner still reads, so the comparison above really ran.
    expect(scanned).toBeGreaterThan(5_000);
  });
});
