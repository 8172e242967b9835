// The compact entry lists of the firewall sync: the difference of two lists against a model of Sets of strings,
// on random lists, whichever order the entries came in; and the IPv4 keys written back as text.

import { expect, test } from "bun:test";
import { ChunkWriter, chunksToString } from "../../../../src/domain/blocklist/chunk-writer";
import { entryDifference, EntryList, ipv4Ranges, rangeDifference, writeIpv4Key } from "../../../../src/domain/firewall/entry-list";
import { rng } from "../../../support/random";

const text4 = (key: number) => {
  const w = new ChunkWriter();
  writeIpv4Key(w, key);
  return chunksToString([w.take()]);
};

test("keys are written back as the entries they were", () => {
  const list = new EntryList();
  list.ipv4(0xc0000201, 32);
  list.ipv4(0xc6336400, 24);
  list.ipv4(0, 0);
  expect(Array.from(list.ipv4Keys(), text4)).toEqual(["0.0.0.0/0", "192.0.2.1", "198.51.100.0/24"]);
});

test("the difference of two random lists equals a model's, in any order of arrival", () => {
  const random = rng(30);
  for (let round = 0; round < 50; round++) {
    const pool = Array.from({ length: 60 }, (_, i) => (i % 5 === 0 ? `2001:db8::${i.toString(16)}` : `10.0.${i}.0/${24 + (i % 9)}`));
    const pick = () => pool.filter(() => random() % 2 === 0).sort(() => (random() % 3) - 1);
    const [a, b] = [pick(), pick()];
    const fill = (entries: string[]) => {
      const list = new EntryList();
      for (const e of entries) {
        if (e.includes(":")) list.ipv6(e);
        else {
          const [address, length] = e.split("/");
          const value = address.split(".").reduce((v, o) => v * 256 + Number(o), 0);
          list.ipv4(value, Number(length));
        }
      }
      return list;
    };
    const d = entryDifference(fill(a), fill(b));
    const normal = (e: string) => (e.endsWith("/32") ? e.slice(0, -3) : e);
    const got = {
      added: [...d.added4.map(text4), ...d.added6].map(normal).sort(),
      removed: [...d.removed4.map(text4), ...d.removed6].map(normal).sort(),
    };
    const want = { added: b.filter((e) => !a.includes(e)).map(normal).sort(), removed: a.filter((e) => !b.includes(e)).map(normal).sort() };
    expect(got).toEqual(want);
  }
});

test("neighbours join into intervals, and the difference of intervals rebuilds the new list from the old", () => {
  const random = rng(31);
  const fill = (picks: number[]) => {
    const list = new EntryList();
    for (const p of picks) list.ipv4(p % 7 === 0 ? p & ~3 : p, p % 7 === 0 ? 30 : 32);
    return list;
  };
  const expand = (firsts: ArrayLike<number>, lasts: ArrayLike<number>, count: number) => {
    const out = new Set<number>();
    for (let i = 0; i < count; i++) for (let a = firsts[i]; a <= lasts[i]; a++) out.add(a);
    return out;
  };
  for (let round = 0; round < 100; round++) {
    const pick = () => [...new Set(Array.from({ length: 40 }, () => 0x0a000000 + (random() % 120)))].filter((p) => p % 7 !== 0 || (p & 3) === 0);
    const [a, b] = [fill(pick()), fill(pick())];
    const ra = ipv4Ranges(a);
    const rb = ipv4Ranges(b);
    // Disjoint, ascending, and no two neighbours left apart.
    for (let i = 1; i < rb.count; i++) expect(rb.firsts[i]).toBeGreaterThan(rb.lasts[i - 1] + 1);
    const d = rangeDifference(ra, rb);
    // Applying the difference to a's intervals gives exactly b's.
    const key = ([f, l]: [number, number]) => `${f}-${l}`;
    const after = new Set(Array.from({ length: ra.count }, (_, i) => key([ra.firsts[i], ra.lasts[i]])));
    for (const r of d.removed) expect(after.delete(key(r))).toBe(true);
    for (const r of d.added) {
      expect(after.has(key(r))).toBe(false);
      after.add(key(r));
    }
    expect([...after].sort()).toEqual(Array.from({ length: rb.count }, (_, i) => key([rb.firsts[i], rb.lasts[i]])).sort());
    // And the intervals hold exactly the addresses of the entries.
    const addresses = new Set<number>();
    for (const k of b.ipv4Keys()) {
      const len = k % 64;
      const first = (k - len) / 64;
      for (let x = first; x < first + 2 ** (32 - len); x++) addresses.add(x);
    }
    expect(expand(rb.firsts, rb.lasts, rb.count)).toEqual(addresses);
  }
});
