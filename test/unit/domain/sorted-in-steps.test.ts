// sortedInSteps sorts as a stable sort does, and does at most `step` comparisons between two yields.

import { expect, test } from "bun:test";
import { Pace } from "../../../src/domain/pace";
import { sortedInSteps } from "../../../src/domain/sorted-in-steps";
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
