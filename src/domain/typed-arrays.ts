// Growing the typed-array columns that hold one entry per slot (the reputation index, the detection window).

type Column = Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array;

/** A copy of `a` of `length` entries, of the same kind: `a`'s entries first, zeros after. */
export function grownTo<T extends Column>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a);
  return b;
}
