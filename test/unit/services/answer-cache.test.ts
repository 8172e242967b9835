// The byte arena of cached reputation answers (answer-cache.ts): answers come back byte for byte, dropping
// and limits work, and views handed out stay valid through growth, clearing and compaction.

import { describe, expect, test } from "bun:test";
import { AnswerCache, NO_ANSWER, lengthOf } from "../../../src/services/answer-cache.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const body = (n: number) => `{"success":true,"data":{"n":${n},"isp":"Réseau ${"x".repeat(n % 300)}"}}`;

describe("AnswerCache", () => {
  test("answers by slot, by IPv4 value and by text come back as their UTF-8 bytes", () => {
    const cache = new AnswerCache(10);
    cache.setSlot(3, body(1));
    cache.setUnknownV4(0xc0000201, body(2));
    cache.setUnknownText("2001:db8::1", body(3));
    expect(text(cache.view(cache.ofSlot(3)))).toBe(body(1));
    expect(text(cache.view(cache.ofUnknownV4(0xc0000201)))).toBe(body(2));
    expect(text(cache.view(cache.ofUnknownText("2001:db8::1")))).toBe(body(3));
    expect(lengthOf(cache.ofSlot(3))).toBe(Buffer.byteLength(body(1)));
    expect([cache.ofSlot(4), cache.ofSlot(5000), cache.ofUnknownV4(1), cache.ofUnknownText("::1")]).toEqual([NO_ANSWER, NO_ANSWER, NO_ANSWER, NO_ANSWER]);
  });

  test("copyInto copies the answer without its head and tail", () => {
    const cache = new AnswerCache(10);
    cache.setSlot(0, body(7));
    const target = Buffer.alloc(400, 0x20);
    const written = cache.copyInto(cache.ofSlot(0), '{"success":true,"data":'.length, 1, target, 5);
    expect(target.toString("utf8", 5, 5 + written)).toBe(body(7).slice('{"success":true,"data":'.length, -1));
    expect(target.toString("utf8", 0, 5)).toBe("     ");
  });

  test("dropping forgets the answer; setting again replaces it", () => {
    const cache = new AnswerCache(10);
    cache.setSlot(1, body(1));
    cache.setSlot(1, body(2));
    expect(text(cache.view(cache.ofSlot(1)))).toBe(body(2));
    cache.dropSlot(1);
    cache.setUnknownV4(7, body(3));
    cache.dropUnknownV4(7);
    cache.setUnknownText("::2", body(4));
    cache.dropUnknownText("::2");
    expect([cache.ofSlot(1), cache.ofUnknownV4(7), cache.ofUnknownText("::2")]).toEqual([NO_ANSWER, NO_ANSWER, NO_ANSWER]);
    expect(cache.counts).toEqual({ reported: 0, unknown: 0 });
  });

  test("the limit: a full slot table starts over; unknown answers leave oldest first", () => {
    const cache = new AnswerCache(3);
    for (let slot = 0; slot < 3; slot++) cache.setSlot(slot, body(slot));
    cache.setSlot(1, body(11)); // a replacement does not count as a new answer
    expect(cache.counts.reported).toBe(3);
    cache.setSlot(9, body(9));
    expect(cache.counts.reported).toBe(1);
    expect(text(cache.view(cache.ofSlot(9)))).toBe(body(9));
    for (let v = 0; v < 5; v++) cache.setUnknownV4(v, body(v));
    expect(cache.counts.unknown).toBe(3);
    expect([0, 1, 2, 3, 4].map((v) => cache.ofUnknownV4(v) !== NO_ANSWER)).toEqual([false, false, true, true, true]);
  });

  test("growing, clearing and compacting never change bytes already handed out", () => {
    const cache = new AnswerCache(100_000);
    cache.setSlot(0, body(0));
    const early = cache.view(cache.ofSlot(0));
    // Enough answers, replaced again and again, to grow the arena and fill it with waste.
    for (let round = 0; round < 8; round++) for (let slot = 0; slot < 2_000; slot++) cache.setSlot(slot, body(slot + round));
    expect(cache.arenaBytes).toBeGreaterThan(1 << 20);
    const before = Array.from({ length: 2_000 }, (_, slot) => text(cache.view(cache.ofSlot(slot))));
    const held = cache.view(cache.ofSlot(1_999));
    expect(cache.compactIfWasteful()).toBe(true);
    expect(cache.compactIfWasteful()).toBe(false);
    expect(Array.from({ length: 2_000 }, (_, slot) => text(cache.view(cache.ofSlot(slot))))).toEqual(before);
    cache.clear();
    cache.setSlot(0, "overwritten?");
    expect(text(early)).toBe(body(0));
    expect(text(held)).toBe(body(1_999 + 7));
  });
});
