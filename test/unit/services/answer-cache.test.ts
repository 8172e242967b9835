// The byte arena of cached reputation answers (answer-cache.ts): answers come back byte for byte until they
// expire or are dropped, the limit holds, bodies assemble from copies, and views handed out stay valid through
// growth, clearing and compaction.

import { describe, expect, test } from "bun:test";
import { ipv4FromNumber, parseIp } from "../../../src/domain/ip.ts";
import { AnswerCache, NO_ANSWER, lengthOf } from "../../../src/services/answer-cache.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const body = (n: number) => `{"success":true,"data":{"n":${n},"isp":"Réseau ${"x".repeat(n % 300)}"}}`;
const NOW = 1_000_000;
const FOREVER = Number.POSITIVE_INFINITY;

describe("AnswerCache", () => {
  test("answers by IPv4 value and by IPv6 text come back as their UTF-8 bytes", () => {
    const cache = new AnswerCache(10);
    cache.set(parseIp("192.0.2.1"), body(1), FOREVER);
    cache.set(parseIp("2001:db8::1"), body(2), FOREVER);
    expect(text(cache.viewOf(cache.ofIpv4(0xc0000201, NOW)))).toBe(body(1));
    expect(text(cache.viewOf(cache.ofText("2001:db8::1", NOW)))).toBe(body(2));
    expect(text(cache.viewOf(cache.of(parseIp("2001:DB8::1"), NOW)))).toBe(body(2));
    expect(lengthOf(cache.ofIpv4(0xc0000201, NOW))).toBe(Buffer.byteLength(body(1)));
    // Only the normalized text finds an IPv6 answer; other addresses find nothing.
    expect([cache.ofText("2001:DB8::1", NOW), cache.ofIpv4(1, NOW), cache.ofText("::1", NOW)]).toEqual([NO_ANSWER, NO_ANSWER, NO_ANSWER]);
  });

  test("an answer is valid up to and including its expiry time", () => {
    const cache = new AnswerCache(10);
    cache.set(ipv4FromNumber(5), body(5), NOW);
    expect(cache.ofIpv4(5, NOW)).not.toBe(NO_ANSWER);
    expect(cache.ofIpv4(5, NOW + 1)).toBe(NO_ANSWER);
  });

  test("dropping forgets the answer; setting again replaces it", () => {
    const cache = new AnswerCache(10);
    const ip = parseIp("198.51.100.1");
    cache.set(ip, body(1), FOREVER);
    cache.set(ip, body(2), FOREVER);
    expect(text(cache.viewOf(cache.of(ip, NOW)))).toBe(body(2));
    expect(cache.size).toBe(1);
    cache.drop(ip);
    cache.drop(parseIp("2001:db8::9")); // nothing cached: nothing happens
    expect([cache.of(ip, NOW), cache.size]).toEqual([NO_ANSWER, 0]);
  });

  test("past the limit each new answer evicts the oldest of one kind, the kind chosen in proportion", () => {
    const cache = new AnswerCache(100);
    for (let v = 0; v < 150; v++) cache.set(ipv4FromNumber(v), body(v), FOREVER);
    expect(cache.size).toBe(100);
    expect([49, 50].map((v) => cache.ofIpv4(v, NOW) !== NO_ANSWER)).toEqual([false, true]);
    const six = (n: number) => parseIp(`2001:db8::${n}`);
    for (let n = 0; n < 100; n++) cache.set(six(n), body(n), FOREVER);
    expect(cache.size).toBe(100);
    // IPv6 answers arriving in a cache full of IPv4 ones win a share (about 63 of 100 expected here)...
    const kept = Array.from({ length: 100 }, (_, n) => cache.of(six(n), NOW) !== NO_ANSWER);
    expect(kept.filter(Boolean).length).toBeGreaterThan(30);
    // ...and those evicted among them are the oldest.
    expect(kept.indexOf(true)).toBe(kept.lastIndexOf(false) + 1);
  });

  test("a body assembles from cached answers without their envelope, and text", () => {
    const cache = new AnswerCache(10);
    cache.set(ipv4FromNumber(7), body(7), FOREVER);
    cache.set(ipv4FromNumber(8), body(8), FOREVER);
    const head = '{"success":true,"data":'.length;
    cache.beginBody(2_000);
    cache.putText("[");
    cache.putAnswer(cache.ofIpv4(7, NOW), head, 1);
    cache.putByte(0x2c);
    cache.putAnswer(cache.ofIpv4(8, NOW), head, 1);
    cache.putText(",\"é\"]");
    expect(text(cache.takeBody())).toBe(`[${body(7).slice(head, -1)},${body(8).slice(head, -1)},"é"]`);
    // The body is assembled past the answers: they are as they were.
    expect(text(cache.viewOf(cache.ofIpv4(7, NOW)))).toBe(body(7));
  });

  test("a dropped answer's space is reused by a later answer of its size, but only after settle()", () => {
    const cache = new AnswerCache(100_000);
    const a = ipv4FromNumber(1);
    const b = ipv4FromNumber(2);
    cache.set(a, body(1), FOREVER);
    const held = cache.ofIpv4(1, NOW);
    cache.drop(a);
    // In the same request the dropped answer's bytes stay as they were...
    cache.set(b, body(1), FOREVER);
    expect(cache.ofIpv4(2, NOW)).not.toBe(held);
    const head = '{"success":true,"data":'.length;
    cache.beginBody(1_000);
    cache.putAnswer(held, head, 1);
    expect(text(cache.takeBody())).toBe(body(1).slice(head, -1));
    // ...and after settle() the next answer of the same size takes its place.
    cache.settle();
    cache.set(ipv4FromNumber(3), body(1), FOREVER);
    expect(cache.ofIpv4(3, NOW)).toBe(held);
    expect(text(cache.viewOf(cache.ofIpv4(3, NOW)))).toBe(body(1));
  });

  test("with churn the arena stays near the live answers; growing keeps every answer", () => {
    const cache = new AnswerCache(100_000);
    for (let round = 0; round < 20; round++) {
      for (let v = 0; v < 2_000; v++) cache.set(ipv4FromNumber(v), body(v + round), NOW + v);
      cache.settle();
    }
    const live = Array.from({ length: 2_000 }, (_, v) => Buffer.byteLength(body(v + 19)) + 8).reduce((a, b) => a + b, 0);
    expect(cache.arenaBytes).toBeLessThan(live * 3);
    expect(Array.from({ length: 2_000 }, (_, v) => text(cache.viewOf(cache.ofIpv4(v, NOW))))).toEqual(Array.from({ length: 2_000 }, (_, v) => body(v + 19)));
    // Expiry times stayed with their answers.
    expect(cache.ofIpv4(1_000, NOW + 1_000)).not.toBe(NO_ANSWER);
    expect(cache.ofIpv4(1_000, NOW + 1_001)).toBe(NO_ANSWER);
  });

  test("when dropped answers outweigh the live ones, settle() starts over small", () => {
    const cache = new AnswerCache(100_000);
    for (let v = 0; v < 10_000; v++) cache.set(ipv4FromNumber(v), body(v), FOREVER);
    const grown = cache.arenaBytes;
    expect(grown).toBeGreaterThan(1 << 20);
    for (let v = 0; v < 9_000; v++) cache.drop(ipv4FromNumber(v));
    cache.settle();
    expect([cache.size, cache.arenaBytes]).toEqual([0, 1 << 20]);
    cache.set(ipv4FromNumber(5), body(5), FOREVER);
    expect(text(cache.viewOf(cache.ofIpv4(5, NOW)))).toBe(body(5));
  });

  test("a view handed out keeps its bytes until the next settle(), even when its answer is dropped", () => {
    const cache = new AnswerCache(100);
    cache.set(ipv4FromNumber(0), body(0), FOREVER);
    const view = cache.viewOf(cache.ofIpv4(0, NOW));
    cache.drop(ipv4FromNumber(0));
    const other = body(0).replace('"n":0', '"n":9');
    cache.set(ipv4FromNumber(1), other, FOREVER);
    expect(text(view)).toBe(body(0));
    // After settle() the dropped answer's slot is free, and the next answer of its size takes it.
    cache.settle();
    cache.set(ipv4FromNumber(2), other, FOREVER);
    expect(text(view)).toBe(other);
  });
});
