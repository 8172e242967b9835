// sortedInSteps sorts as a stable sort does, and does at most `step` comparisons between two yields;
// sortNumbersInSteps sorts numbers as the native sort does, yielding between runs and merge steps.

import { describe, expect, test } from "bun:test";
import { Pace } from "../../../src/domain/pace";
import { NATIVE_SORT_RUN, sortNumbersInSteps, sortedInSteps } from "../../../src/domain/sorted-in-steps";
import { allAtOnce } from "../../../src/domain/steps";
import { rng } from "../../support/random";

/** `n` keys from 0 to `distinct` - 1 (many ties when few are distinct). */
function keysOf(n: number, distinct: number, seed: number): number[] {
  const next = rng(seed);
  return Array.from({ length: n }, () => next() % distinct);
}

const stableOrder = (keys: readonly number[]): number[] => keys.map((_, i) => i).sort((a, b) => keys[a] - keys[b]);

test.each([
  [0, 1],
  [1, 1],
  [2, 2],
  [7, 3],
  [1_000, 10],
  [1_025, 1_000_000],
  [20_000, 50],
])("%p keys of %p values: the order of a stable sort", (n, distinct) => {
  for (const seed of [1, 2, 3]) {
    const keys = keysOf(n, distinct, seed);
    const order = allAtOnce(sortedInSteps(n, (a, b) => keys[a] < keys[b], new Pace(Number.POSITIVE_INFINITY)));
    expect([...order]).toEqual(stableOrder(keys));
  }
});

test.each([1, 3, 64, 1_000])("step %p: at most `step` comparisons between two yields, and the same order", (step) => {
  const keys = keysOf(5_000, 300, 9);
  let comparisons = 0;
  let most = 0;
  const steps = sortedInSteps(keys.length, (a, b) => (comparisons++, keys[a] < keys[b]), new Pace(step));
  let next = steps.next();
  for (; !next.done; next = steps.next()) {
    most = Math.max(most, comparisons);
    comparisons = 0;
  }
  most = Math.max(most, comparisons);
  expect(most).toBeLessThanOrEqual(step);
  expect([...next.value]).toEqual(stableOrder(keys));
});

test("a list already in order is not sorted: one comparison a position", () => {
  const keys = keysOf(10_000, 40, 4).sort((a, b) => a - b);
  let comparisons = 0;
  const order = allAtOnce(sortedInSteps(keys.length, (a, b) => (comparisons++, keys[a] < keys[b]), new Pace(Number.POSITIVE_INFINITY)));
  expect(comparisons).toBe(keys.length - 1);
  expect([...order]).toEqual(keys.map((_, i) => i));
});

describe("sortNumbersInSteps", () => {
  const numbersOf = (n: number, seed: number) => {
    const next = rng(seed);
    return Float64Array.from({ length: n }, () => next() * 1024 + (next() % 1024));
  };

  test.each([0, 1, 2, 1_000, NATIVE_SORT_RUN, NATIVE_SORT_RUN + 1, 3 * NATIVE_SORT_RUN + 17, 5 * NATIVE_SORT_RUN])("%p numbers: as the native sort orders them", (n) => {
    for (const seed of [1, 2]) {
      const a = numbersOf(n, seed);
      const expected = a.slice().sort();
      allAtOnce(sortNumbersInSteps(a, new Pace(Number.POSITIVE_INFINITY)));
      expect(a).toEqual(expected);
    }
  });

  test("yields between steps: about one per step's worth of numbers merged, one per native run", () => {
    const n = 4 * NATIVE_SORT_RUN + 5;
    const a = numbersOf(n, 3);
    const expected = a.slice().sort();
    const steps = sortNumbersInSteps(a, new Pace(1000));
    let yields = 0;
    for (let next = steps.next(); !next.done; next = steps.next()) yields++;
    expect(a).toEqual(expected);
    // The check of order stops at the first number out of order; 5 runs; 3 merge passes of n numbers.
    expect(yields).toBeGreaterThanOrEqual(5 + Math.floor((3 * n) / 1000) - 1);
  });

  test("numbers already in order: one pass, no sort", () => {
    const a = numbersOf(3 * NATIVE_SORT_RUN, 4).sort();
    const steps = sortNumbersInSteps(a, new Pace(1000));
    let yields = 0;
    for (let next = steps.next(); !next.done; next = steps.next()) yields++;
    expect(yields).toBe(Math.floor((a.length - 1) / 1000));
  });
});
