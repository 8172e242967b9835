// The set of asked addresses behind an unreported answer's `cached` flag (asked-addresses.ts): checked against a
// plain Set over random sequences of asks and changes, with keys chosen to collide, 0 among them.

import { describe, expect, test } from "bun:test";
import { AskedAddresses } from "../../../../src/services/lookups/asked-addresses";
import { rng } from "../../../support/random";

type Family = "v4" | "v6";

/** Keys from a small pool, so that asks repeat and probe chains overlap; 0 (0.0.0.0, ::) is one of them. */
function keyPool(family: Family, size: number, seed: number): number[][] {
  const next = rng(seed);
  const pool: number[][] = [family === "v4" ? [0] : [0, 0, 0, 0]];
  while (pool.length < size) pool.push(family === "v4" ? [next()] : [next(), 0, next() & 3, next() & 0xff]);
  return pool;
}

const mark = (set: AskedAddresses, family: Family, key: number[]) => (family === "v4" ? set.markIpv4(key[0]) : set.markIpv6(Uint32Array.from(key)));
const forget = (set: AskedAddresses, family: Family, key: number[]) => (family === "v4" ? set.forgetIpv4(key[0]) : set.forgetIpv6(Uint32Array.from(key)));

describe.each(["v4", "v6"] as Family[])("AskedAddresses, %s", (family) => {
  test("below its limit it is exactly a set: asked before and not forgotten since", () => {
    const set = new AskedAddresses(1 << 16);
    const model = new Set<string>();
    const pool = keyPool(family, 3000, 11);
    const next = rng(12);
    for (let step = 0; step < 60_000; step++) {
      const key = pool[next() % pool.length];
      const name = key.join(":");
      if (next() % 4 === 0) {
        forget(set, family, key);
        model.delete(name);
      } else {
        expect(mark(set, family, key)).toBe(model.has(name));
        model.add(name);
      }
    }
    expect(set.size).toBe(model.size);
  });

  test("past its limit: never 'asked' for an address not asked since it changed, and the recent ones are remembered", () => {
    const limit = 64; // slots of one generation: 32 keys each
    const set = new AskedAddresses(family === "v4" ? limit : limit * 4);
    const pool = keyPool(family, 500, 21);
    const next = rng(22);
    const asked = new Set<string>(); // asked since the last change, remembered or not
    const recent: string[] = []; // distinct keys asked, newest last
    for (let step = 0; step < 40_000; step++) {
      const key = pool[next() % pool.length];
      const name = key.join(":");
      if (next() % 5 === 0) {
        forget(set, family, key);
        asked.delete(name);
        const at = recent.indexOf(name);
        if (at >= 0) recent.splice(at, 1);
        continue;
      }
      const answer = mark(set, family, key);
      if (answer) expect(asked.has(name)).toBe(true);
      // Among the last (half a generation) distinct keys asked: remembered for certain.
      if (recent.slice(-(limit / 2 - 1)).includes(name)) expect(answer).toBe(true);
      asked.add(name);
      const at = recent.indexOf(name);
      if (at >= 0) recent.splice(at, 1);
      recent.push(name);
    }
    // Memory stays bounded: two generations at most.
    expect(set.size).toBeLessThanOrEqual(limit);
  });

  test("clear forgets everything", () => {
    const set = new AskedAddresses();
    const pool = keyPool(family, 100, 31);
    for (const key of pool) expect(mark(set, family, key)).toBe(false);
    for (const key of pool) expect(mark(set, family, key)).toBe(true);
    set.clear();
    expect(set.size).toBe(0);
    for (const key of pool) expect(mark(set, family, key)).toBe(false);
  });
});
