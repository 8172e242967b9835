// A dropped answer's slot is reused by the next answer of its size, so an address whose answer is dropped and
// cached again with the same length gets its old handle back: the eviction and expiry queues name answers by the
// sequence number of their `set`, so the old entries of such an address stay stale.

import { describe, expect, test } from "bun:test";
import { ipv4FromNumber } from "../../../../src/domain/ip";
import { AnswerCache, NO_ANSWER } from "../../../../src/services/lookups/answer-cache";

const body = (n: number) => `{"success":true,"data":{"n":${n}}}`;
const FOREVER = Number.POSITIVE_INFINITY;
const NOW = 1_000_000;

describe("AnswerCache eviction when a slot comes back to the same address", () => {
  test("an answer cached again (same length, same slot) is not evicted as the oldest", () => {
    const cache = new AnswerCache(4);
    const hot = ipv4FromNumber(1);
    cache.set(hot, body(1), FOREVER); // first, so it is queued first
    for (let v = 2; v <= 4; v++) cache.set(ipv4FromNumber(v), body(v), FOREVER);
    // The hot address changes (a report) and is asked again: its answer has the same length and takes the slot
    // its old answer left, so it is now the newest answer of the four.
    cache.drop(hot);
    cache.settle(NOW);
    cache.set(hot, body(1), FOREVER);
    cache.set(ipv4FromNumber(5), body(5), FOREVER); // full: the oldest (2) must go
    expect([1, 2, 3, 4, 5].map((v) => cache.ofIpv4(v) !== NO_ANSWER)).toEqual([true, false, true, true, true]);
  });

  test("the queue stays bounded by the live answers while one address is dropped and cached again", () => {
    const cache = new AnswerCache(1000);
    const hot = ipv4FromNumber(1);
    cache.set(ipv4FromNumber(2), body(2), FOREVER);
    cache.set(hot, body(1), FOREVER);
    // A flooded address: each batch of reports changes it, each lookup after caches an answer of the same length.
    for (let round = 0; round < 20_000; round++) {
      cache.drop(hot);
      cache.settle(NOW + round);
      cache.set(hot, body(1), FOREVER);
    }
    // Two live answers: `set` keeps the queue within 2 * size + 1024 entries (`retain` drops the stale ones; if old
    // entries looked current again, each set would walk and copy all of them).
    const queued = (cache as unknown as { arrivals: { size: number } }).arrivals.size;
    expect(cache.size).toBe(2);
    expect(queued).toBeLessThanOrEqual(2 * cache.size + 1024);
  });
});

test("an expiry queued for an answer since replaced in the same slot does not drop the new answer", () => {
  const cache = new AnswerCache(100);
  const ip = ipv4FromNumber(7);
  cache.set(ip, body(7), NOW + 10);
  cache.drop(ip);
  cache.settle(NOW);
  cache.set(ip, body(7), NOW + 1_000); // same length: the same slot, the same handle
  cache.settle(NOW + 20); // the first answer's expiry has passed; the second's has not
  expect(cache.ofIpv4(7)).not.toBe(NO_ANSWER);
  cache.settle(NOW + 1_001);
  expect(cache.ofIpv4(7)).toBe(NO_ANSWER);
});
