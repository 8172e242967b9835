// The expiry queue (expiry-queue.ts) against a sorted list: random pushes and pops hand back exactly the
// entries due, earliest first.

import { describe, expect, test } from "bun:test";
import { ExpiryQueue } from "../../../src/index/expiry-queue";
import { rng } from "../../support/random";

describe("ExpiryQueue", () => {
  test("empty: the earliest time is Infinity and nothing pops", () => {
    const queue = new ExpiryQueue<string>();
    const popped: string[] = [];
    queue.popBefore(Number.POSITIVE_INFINITY, (key) => popped.push(key));
    expect([queue.size, queue.earliest, popped]).toEqual([0, Number.POSITIVE_INFINITY, []]);
  });

  test("pops every entry before the time, earliest first, and keeps the rest", () => {
    const next = rng(0x9e);
    const queue = new ExpiryQueue<number>();
    let reference: { time: number; key: number; token: number }[] = [];
    let now = 0;
    for (let step = 0; step < 20_000; step++) {
      if (next() % 3 !== 0) {
        const entry = { time: now + (next() % 1_000), key: step, token: next() % 7 };
        queue.push(entry.time, entry.key, entry.token);
        reference.push(entry);
      } else {
        now += next() % 50;
        const popped: { time: number; key: number; token: number }[] = [];
        const earliest = queue.earliest;
        queue.popBefore(now, (key, token) => popped.push({ time: reference.find((r) => r.key === key)!.time, key, token }));
        const due = reference.filter((r) => r.time < now);
        reference = reference.filter((r) => r.time >= now);
        expect(popped.map((p) => p.key).sort((a, b) => a - b)).toEqual(due.map((d) => d.key).sort((a, b) => a - b));
        expect(popped.map((p) => p.token)).toEqual(popped.map((p) => due.find((d) => d.key === p.key)!.token));
        // Earliest first.
        for (let i = 1; i < popped.length; i++) expect(popped[i].time).toBeGreaterThanOrEqual(popped[i - 1].time);
        if (due.length > 0) expect(earliest).toBe(Math.min(...due.map((d) => d.time)));
        expect(queue.size).toBe(reference.length);
      }
    }
    queue.clear();
    expect([queue.size, queue.earliest]).toEqual([0, Number.POSITIVE_INFINITY]);
  });
});
