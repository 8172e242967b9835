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

/** Numbers natively sorted at a time by `sortNumbersInSteps` (a few milliseconds), before the runs are merged. */
export const NATIVE_SORT_RUN = 32_768;

/**
 * Sorts `a` ascending in place, a step at a time: runs of NATIVE_SORT_RUN numbers sorted natively (each one unit of
 * work per number on `pace`, then a yield), then merged pairwise from the bottom up (a unit per number merged). An
 * array already in order, as the index walk's IPv4 decision ids are, is seen in one pass and left as it is.
 */
export function* sortNumbersInSteps(a: Float64Array, pace: Pace): Generator<void, void> {
  const n = a.length;
  let inOrder = true;
  for (let i = 1; i < n && inOrder; i++) {
    if (a[i] < a[i - 1]) inOrder = false;
    if (pace.spend()) yield;
  }
  if (inOrder) return;
  for (let lo = 0; lo < n; lo += NATIVE_SORT_RUN) {
    a.subarray(lo, Math.min(n, lo + NATIVE_SORT_RUN)).sort();
    if (pace.spend(Math.min(NATIVE_SORT_RUN, n - lo))) yield;
  }
  if (n <= NATIVE_SORT_RUN) return;
  let from: Float64Array = a;
  let to: Float64Array = new Float64Array(n);
  for (let width = NATIVE_SORT_RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      for (let i = lo, j = mid, k = lo; k < hi; k++) {
        to[k] = j < hi && (i === mid || from[j] < from[i]) ? from[j++] : from[i++];
        if (pace.spend()) yield;
      }
    }
    [from, to] = [to, from];
  }
  if (from !== a) a.set(from);
}
