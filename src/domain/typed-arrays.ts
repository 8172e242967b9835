// Typed-array columns that hold one entry per slot (the reputation index, the detection window, decision ids):
// growing them, and finding a value in a sorted one.

type Column = Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array;

/** A copy of `a` of `length` entries, of the same kind: `a`'s entries first, zeros after. */
export function grownTo<T extends Column>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a);
  return b;
}

/** Where `value` stands in the ascending `sorted`, or -1 when it is not there. */
export function sortedIndexOf(sorted: Float64Array, value: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] === value) return mid;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
