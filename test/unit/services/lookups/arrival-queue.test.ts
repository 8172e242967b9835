// The answer cache's eviction order: the oldest current entry comes out first, stale entries (the owner's token
// no longer matches) are passed over, and neither compaction nor `retain` changes the order.

import { describe, expect, test } from "bun:test";
import { ArrivalQueue } from "../../../../src/services/lookups/arrival-queue";

describe("ArrivalQueue", () => {
  test("takes the oldest current entry, passing over stale ones", () => {
    const queue = new ArrivalQueue<number | string>();
    const current = new Map<number | string, number>([[1, 10], ["b", 20], [3, 30]]);
    queue.push(1, 11); // replaced since by token 10, queued later
    queue.push("b", 20);
    queue.push(1, 10);
    queue.push(3, 30);
    const isCurrent = (key: number | string, token: number) => current.get(key) === token;
    expect(queue.takeOldest(isCurrent)).toBe("b");
    current.delete("b");
    expect(queue.takeOldest(isCurrent)).toBe(1);
    current.delete(1);
    current.delete(3); // dropped for another reason: its entry is stale
    expect(queue.takeOldest(isCurrent)).toBeUndefined();
    expect(queue.size).toBe(0);
  });

  test("the order holds through compaction and retain", () => {
    const queue = new ArrivalQueue<number>();
    const current = new Set<number>();
    for (let key = 0; key < 10_000; key++) {
      queue.push(key, key);
      current.add(key);
    }
    const isCurrent = (key: number) => current.has(key);
    const taken: number[] = [];
    for (let i = 0; i < 3_000; i++) {
      const key = queue.takeOldest(isCurrent)!;
      current.delete(key);
      taken.push(key);
    }
    expect(taken).toEqual(Array.from({ length: 3_000 }, (_, i) => i));
    // Every other remaining key goes stale; retain drops exactly those, and the rest come out in order.
    for (let key = 3_000; key < 10_000; key += 2) current.delete(key);
    queue.retain(isCurrent);
    expect(queue.size).toBe(3_500);
    for (let key = 10_000; key < 10_010; key++) {
      queue.push(key, key);
      current.add(key);
    }
    const rest: number[] = [];
    for (let key = queue.takeOldest(isCurrent); key !== undefined; key = queue.takeOldest(isCurrent)) {
      current.delete(key);
      rest.push(key);
    }
    const expected = [...Array.from({ length: 3_500 }, (_, i) => 3_001 + 2 * i), ...Array.from({ length: 10 }, (_, i) => 10_000 + i)];
    expect(rest).toEqual(expected);
  });
});
