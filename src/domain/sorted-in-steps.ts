// Sorting a long list a step at a time (a detection group can hold the whole window, 500,000 reports): a merge
// sort from the bottom up, each element merged a unit of work on the caller's Pace. A list already in order, as
// reports joining a group usually are, is seen in one pass and not sorted.

import type { Pace } from "./pace";

/**
 * The positions 0 to `n` - 1 in the order `before` puts them, equal ones in position order (a stable sort).
 * `before(a, b)` says whether position `a` goes strictly before position `b`.
 */
export function* sortedInSteps(n: number, before: (a: number, b: number) => boolean, pace: Pace): Generator<void, Int32Array> {
  let from = new Int32Array(n);
  let inOrder = true;
  for (let i = 0; i < n; i++) {
    from[i] = i;
    if (inOrder && i > 0 && before(i, i - 1)) inOrder = false;
    if (pace.spend()) yield;
  }
  if (inOrder) return from;
  let to = new Int32Array(n);
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      // Of equals, the left run's goes first: that keeps them in position order.
      for (let i = lo, j = mid, k = lo; k < hi; k++) {
        to[k] = j < hi && (i === mid || before(from[j], from[i])) ? from[j++] : from[i++];
        if (pace.spend()) yield;
      }
    }
    [from, to] = [to, from];
  }
  return from;
}
