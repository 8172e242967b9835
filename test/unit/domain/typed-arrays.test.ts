// The typed-array column helpers: sortedIndexOf against a plain search of the same values.

import { expect, test } from "bun:test";
import { sortedIndexOf } from "../../../src/domain/typed-arrays";
import { rng } from "../../support/random";

test("sortedIndexOf finds every present value at its place and answers -1 for the absent ones", () => {
  const next = rng(7);
  for (const size of [0, 1, 2, 3, 17, 1000]) {
    const values = Float64Array.from(new Set(Array.from({ length: size }, () => next() % 5000))).sort();
    for (let probe = -1; probe <= 5001; probe += 7) expect(sortedIndexOf(values, probe)).toBe(values.indexOf(probe));
    values.forEach((v, i) => expect(sortedIndexOf(values, v)).toBe(i));
  }
});
