// A small seeded generator (mulberry32) for property tests and benchmarks, so a failure can be replayed.

/** Unsigned 32-bit integers from `seed`. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Numbers in [0, 1) from `seed`. */
export function rngUnit(seed: number): () => number {
  const next = rng(seed);
  return () => next() / 4294967296;
}
