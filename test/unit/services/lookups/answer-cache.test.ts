// The byte arena of cached reputation answers (answer-cache.ts): answers come back byte for byte until they
// expire or are dropped, the limit holds, bodies assemble from copies, and views handed out stay valid through
// growth, clearing and compaction.

import { describe, expect, test } from "bun:test";
import { ipv4FromNumber, parseIp } from "../../../../src/domain/ip";
import { AnswerCache, NO_ANSWER, lengthOf } from "../../../../src/services/lookups/answer-cache";
import { rng } from "../../../support/random";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const body = (n: number) => `{"success":true,"data":{"n":${n},"isp":"Réseau ${"x".repeat(n % 300)}"}}`;
const NOW = 1_000_000;
const FOREVER = Number.POSITIVE_INFINITY;

describe("AnswerCache", () => {
  test("answers by IPv4 value and by IPv6 text come back as their UTF-8 bytes", () => {
    const cache = new AnswerCache(10);
    cache.set(parseIp("192.0.2.1"), body(1), FOREVER);
    cache.set(parseIp("2001:db8::1"), body(2), FOREVER);
    expect(text(cache.viewOf(cache.ofIpv4(0xc0000201)))).toBe(body(1));
    expect(text(cache.viewOf(cache.ofText("2001:db8::1")))).toBe(body(2));
    expect(text(cache.viewOf(cache.of(parseIp("2001:DB8::1"))))).toBe(body(2));
    expect(lengthOf(cache.ofIpv4(0xc0000201))).toBe(Buffer.byteLength(body(1)));
    // Only the normalized text finds an IPv6 answer; other addresses find nothing.
    expect([cache.ofText("2001:DB8::1"), cache.ofIpv4(1), cache.ofText("::1")]).toEqual([NO_ANSWER, NO_ANSWER, NO_ANSWER]);
  });

  test("an answer is valid up to and including its expiry time: settle() drops it after", () => {
    const cache = new AnswerCache(10);
    cache.set(ipv4FromNumber(5), body(5), NOW);
    cache.set(ipv4FromNumber(6), body(6), NOW + 10);
    cache.set(ipv4FromNumber(7), body(7), FOREVER);
    cache.settle(NOW);
    expect([5, 6, 7].map((v) => cache.ofIpv4(v) !== NO_ANSWER)).toEqual([true, true, true]);
    cache.settle(NOW + 1);
    expect([5, 6, 7].map((v) => cache.ofIpv4(v) !== NO_ANSWER)).toEqual([false, true, true]);
    cache.settle(NOW + 11);
    expect([5, 6, 7].map((v) => cache.ofIpv4(v) !== NO_ANSWER)).toEqual([false, false, true]);
    // A replaced answer keeps only its new expiry.
    cache.set(ipv4FromNumber(8), body(8), NOW + 20);
    cache.set(ipv4FromNumber(8), body(8), NOW + 40);
    cache.settle(NOW + 30);
    expect(cache.ofIpv4(8)).not.toBe(NO_ANSWER);
    cache.settle(NOW + 41);
    expect(cache.ofIpv4(8)).toBe(NO_ANSWER);
  });

  test("expiry agrees with a model over random answers, replacements, drops and times", () => {
    const next = rng(0xe4);
    const cache = new AnswerCache(1_000_000);
    const model = new Map<number, number>(); // value → expiry
    let now = NOW;
    for (let step = 0; step < 20_000; step++) {
      const value = next() % 3_000;
      const r = next() % 10;
      if (r < 6) {
        const expiresAt = r === 0 ? FOREVER : now + (next() % 500);
        cache.set(ipv4FromNumber(value), body(value), expiresAt);
        model.set(value, expiresAt);
      } else if (r < 7) {
        cache.drop(ipv4FromNumber(value));
        model.delete(value);
      } else {
        now += next() % 20;
        cache.settle(now);
        for (const [v, expiresAt] of model) if (now > expiresAt) model.delete(v);
        if (step % 97 === 0) for (let v = 0; v < 3_000; v++) expect([v, cache.ofIpv4(v) !== NO_ANSWER]).toEqual([v, model.has(v)]);
      }
    }
  });

  test("dropping forgets the answer; setting again replaces it", () => {
    const cache = new AnswerCache(10);
    const ip = parseIp("198.51.100.1");
    cache.set(ip, body(1), FOREVER);
    cache.set(ip, body(2), FOREVER);
    expect(text(cache.viewOf(cache.of(ip)))).toBe(body(2));
    expect(cache.size).toBe(1);
    cache.drop(ip);
    cache.drop(parseIp("2001:db8::9")); // nothing cached: nothing happens
    expect([cache.of(ip), cache.size]).toEqual([NO_ANSWER, 0]);
  });

  test("past the limit each new answer evicts the oldest, of either kind", () => {
    const cache = new AnswerCache(100);
    for (let v = 0; v < 150; v++) cache.set(ipv4FromNumber(v), body(v), FOREVER);
    expect(cache.size).toBe(100);
    expect([49, 50].map((v) => cache.ofIpv4(v) !== NO_ANSWER)).toEqual([false, true]);
    // An answer dropped (its address changed) and one cached again are not the oldest any more.
    cache.drop(ipv4FromNumber(50));
    cache.set(ipv4FromNumber(51), body(51), FOREVER);
    const six = (n: number) => parseIp(`2001:db8::${n}`);
    for (let n = 0; n < 60; n++) cache.set(six(n), body(n), FOREVER);
    expect(cache.size).toBe(100);
    // 99 IPv4 answers, 52..149 and 51 (cached last): the 60 new ones took the room of 50 (dropped) and 52..110.
    const keptIpv4 = Array.from({ length: 150 }, (_, v) => v).filter((v) => cache.ofIpv4(v) !== NO_ANSWER);
    expect(keptIpv4).toEqual([51, ...Array.from({ length: 39 }, (_, i) => 111 + i)]);
    expect(Array.from({ length: 60 }, (_, n) => cache.of(six(n)) !== NO_ANSWER).every(Boolean)).toBe(true);
  });

  test("a body assembles from cached answers without their envelope, and text", () => {
    const cache = new AnswerCache(10);
    cache.set(ipv4FromNumber(7), body(7), FOREVER);
    cache.set(ipv4FromNumber(8), body(8), FOREVER);
    const head = '{"success":true,"data":'.length;
    cache.beginBody(2_000);
    cache.putText("[");
    cache.putAnswer(cache.ofIpv4(7), head, 1);
    cache.putByte(0x2c);
    cache.putAnswer(cache.ofIpv4(8), head, 1);
    cache.putText(",\"é\"]");
    expect(text(cache.takeBody())).toBe(`[${body(7).slice(head, -1)},${body(8).slice(head, -1)},"é"]`);
    // The body is assembled past the answers: they are as they were.
    expect(text(cache.viewOf(cache.ofIpv4(7)))).toBe(body(7));
  });

  test("a dropped answer's space is reused by a later answer of its size, but only after settle()", () => {
    const cache = new AnswerCache(100_000);
    const a = ipv4FromNumber(1);
    const b = ipv4FromNumber(2);
    cache.set(a, body(1), FOREVER);
    const held = cache.ofIpv4(1);
    cache.drop(a);
    // In the same request the dropped answer's bytes stay as they were...
    cache.set(b, body(1), FOREVER);
    expect(cache.ofIpv4(2)).not.toBe(held);
    const head = '{"success":true,"data":'.length;
    cache.beginBody(1_000);
    cache.putAnswer(held, head, 1);
    expect(text(cache.takeBody())).toBe(body(1).slice(head, -1));
    // ...and after settle() the next answer of the same size takes its place.
    cache.settle(NOW);
    cache.set(ipv4FromNumber(3), body(1), FOREVER);
    expect(cache.ofIpv4(3)).toBe(held);
    expect(text(cache.viewOf(cache.ofIpv4(3)))).toBe(body(1));
  });

  test("with churn the arena stays near the live answers; growing keeps every answer", () => {
    const cache = new AnswerCache(100_000);
    for (let round = 0; round < 20; round++) {
      for (let v = 0; v < 2_000; v++) cache.set(ipv4FromNumber(v), body(v + round), NOW + v);
      cache.settle(NOW);
    }
    const live = Array.from({ length: 2_000 }, (_, v) => Buffer.byteLength(body(v + 19)) + 8).reduce((a, b) => a + b, 0);
    expect(cache.arenaBytes).toBeLessThan(live * 3);
    expect(Array.from({ length: 2_000 }, (_, v) => text(cache.viewOf(cache.ofIpv4(v))))).toEqual(Array.from({ length: 2_000 }, (_, v) => body(v + 19)));
    // Expiry times stayed with their answers (and the queue, rebuilt along the way, with them).
    cache.settle(NOW + 1_000);
    expect([cache.ofIpv4(999), cache.ofIpv4(1_000)].map((h) => h !== NO_ANSWER)).toEqual([false, true]);
    cache.settle(NOW + 1_001);
    expect(cache.ofIpv4(1_000)).toBe(NO_ANSWER);
    expect(cache.size).toBe(2_000 - 1_001);
  });

  test("when dropped answers outweigh the live ones, settle() starts over small", () => {
    const cache = new AnswerCache(100_000);
    for (let v = 0; v < 10_000; v++) cache.set(ipv4FromNumber(v), body(v), FOREVER);
    const grown = cache.arenaBytes;
    expect(grown).toBeGreaterThan(1 << 20);
    for (let v = 0; v < 9_000; v++) cache.drop(ipv4FromNumber(v));
    cache.settle(NOW);
    expect([cache.size, cache.arenaBytes]).toEqual([0, 1 << 20]);
    cache.set(ipv4FromNumber(5), body(5), FOREVER);
    expect(text(cache.viewOf(cache.ofIpv4(5)))).toBe(body(5));
  });

  test("the arena grows in place, without copying its answers, and keeps every one", () => {
    const cache = new AnswerCache(100_000);
    const first = cache.arenaBytes;
    for (let v = 0; v < 40_000; v++) cache.set(ipv4FromNumber(v), body(v), FOREVER);
    expect(cache.arenaBytes).toBeGreaterThan(4 * first);
    expect(cache.growthCopies).toBe(0);
    expect(Array.from({ length: 40_000 }, (_, v) => text(cache.viewOf(cache.ofIpv4(v))))).toEqual(Array.from({ length: 40_000 }, (_, v) => body(v)));
    cache.clear();
    expect(cache.arenaBytes).toBe(first);
  });

  test("a view handed out keeps its bytes until the next settle(), even when its answer is dropped", () => {
    const cache = new AnswerCache(100);
    cache.set(ipv4FromNumber(0), body(0), FOREVER);
    const view = cache.viewOf(cache.ofIpv4(0));
    cache.drop(ipv4FromNumber(0));
    const other = body(0).replace('"n":0', '"n":9');
    cache.set(ipv4FromNumber(1), other, FOREVER);
    expect(text(view)).toBe(body(0));
    // After settle() the dropped answer's slot is free, and the next answer of its size takes it.
    cache.settle(NOW);
    cache.set(ipv4FromNumber(2), other, FOREVER);
    expect(text(view)).toBe(other);
  });
});
