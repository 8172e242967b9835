// The smallest set of CIDR blocks covering exactly a set of addresses and networks (the `cidr` blocklist).
// Input comes in ascending order of first address; overlapping and adjacent ranges merge, and each merged
// range is cut into its maximal aligned blocks as soon as a gap closes it, so output streams with the input.
// The maximal aligned blocks of a set are its unique smallest cover, which is what the tests check.

import { type Cidr, compareWords, type Ip, formatIpv6, ipFromWords, ipv4FromNumber, lastOfIpv6Network } from "./ip";

/** Receives each IPv4 block of the cover, in ascending order. */
export type Ipv4BlockSink = (network: number, prefixLength: number) => void;
/** Receives each IPv6 block of the cover, in ascending order. `network` is reused: copy it to keep it. */
export type Ipv6BlockSink = (network: Uint32Array, prefixLength: number) => void;

const TWO_POW_32 = 4294967296;

/** Merges ascending IPv4 ranges and emits their cover. Numbers are unsigned 32-bit values. */
export class Ipv4CidrAggregator {
  private start = -1;
  private end = -1;

  constructor(private readonly emit: Ipv4BlockSink) {}

  /** Adds the inclusive range [first, last]; `first` must not be below the previous range's `first`. */
  add(first: number, last: number = first): void {
    if (first < this.start) throw new RangeError("IPv4 ranges must come in ascending order");
    if (last < first) throw new RangeError("a range must not end before it starts");
    if (this.start >= 0 && first <= this.end + 1) {
      if (last > this.end) this.end = last;
      return;
    }
    if (this.start >= 0) emitIpv4Range(this.start, this.end, this.emit);
    this.start = first;
    this.end = last;
  }

  /** Emits the pending range; the aggregator can then take ranges above it again. */
  finish(): void {
    if (this.start >= 0) emitIpv4Range(this.start, this.end, this.emit);
    this.start = this.end = -1;
  }
}

/** Cuts [start, end] into maximal aligned blocks, ascending. */
export function emitIpv4Range(start: number, end: number, emit: Ipv4BlockSink): void {
  let s = start;
  while (s <= end) {
    // Alignment of s (s & -s is its lowest set bit, as int32), and the size of what is left.
    const align = s === 0 ? 32 : 31 - Math.clz32(s & -s);
    const span = end - s + 1;
    const fit = span === TWO_POW_32 ? 32 : 31 - Math.clz32(span);
    const bits = align < fit ? align : fit;
    emit(s, 32 - bits);
    s += 2 ** bits;
  }
}

/** The cover of a sorted list of IPv4 values (duplicates allowed), without allocating per block. */
export function aggregateSortedIpv4(values: ArrayLike<number>, emit: Ipv4BlockSink): void {
  const n = values.length;
  if (n === 0) return;
  let start = values[0];
  let end = start;
  for (let i = 1; i < n; i++) {
    const v = values[i];
    if (v <= end + 1) {
      if (v < start) throw new RangeError("IPv4 values must be sorted ascending");
      if (v > end) end = v;
      continue;
    }
    emitIpv4Range(start, end, emit);
    start = end = v;
  }
  emitIpv4Range(start, end, emit);
}

// ---------------------------------------------------------------------------------------------------------
// IPv6: 128-bit arithmetic on four unsigned 32-bit words, most significant first (no BigInt).

/** a += 2^bits; returns false when the sum passes the top of the address space. */
function addPowerOfTwo(a: Uint32Array, bits: number): boolean {
  let i = 3 - (bits >>> 5);
  if (i < 0) return false;
  let carry = 2 ** (bits & 31);
  for (; i >= 0 && carry > 0; i--) {
    const sum = a[i] + carry;
    a[i] = sum >>> 0;
    carry = sum >= TWO_POW_32 ? 1 : 0;
  }
  return carry === 0;
}

function isAllOnes(a: ArrayLike<number>): boolean {
  return a[0] === 0xffffffff && a[1] === 0xffffffff && a[2] === 0xffffffff && a[3] === 0xffffffff;
}

const scratchNext = new Uint32Array(4);

/** a == b + 1 */
function isSuccessor(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (isAllOnes(b)) return false;
  scratchNext.set(b as ArrayLike<number>);
  addPowerOfTwo(scratchNext, 0);
  return compareWords(a, scratchNext) === 0;
}

const scratchDiff = new Uint32Array(4);
const scratchStart = new Uint32Array(4);

/** Cuts [start, end] into maximal aligned blocks, ascending. */
export function emitIpv6Range(start: ArrayLike<number>, end: ArrayLike<number>, emit: Ipv6BlockSink): void {
  const s = scratchStart;
  s.set(start as ArrayLike<number>);
  const diff = scratchDiff;
  for (;;) {
    let align = 128;
    for (let i = 3; i >= 0; i--) {
      if (s[i] !== 0) {
        align = 32 * (3 - i) + (31 - Math.clz32(s[i] & -s[i]));
        break;
      }
    }
    // diff = end - s; the span is diff + 1, and fit = floor(log2(span)).
    let borrow = 0;
    for (let i = 3; i >= 0; i--) {
      const d = end[i] - s[i] - borrow;
      diff[i] = d >>> 0;
      borrow = d < 0 ? 1 : 0;
    }
    let fit: number;
    if (isAllOnes(diff)) fit = 128;
    else {
      addPowerOfTwo(diff, 0);
      fit = 0;
      for (let i = 0; i < 4; i++) {
        if (diff[i] !== 0) {
          fit = 32 * (3 - i) + (31 - Math.clz32(diff[i]));
          break;
        }
      }
    }
    const bits = align < fit ? align : fit;
    emit(s, 128 - bits);
    if (!addPowerOfTwo(s, bits) || compareWords(s, end) > 0) return;
  }
}

/** Merges ascending IPv6 ranges and emits their cover. */
export class Ipv6CidrAggregator {
  private readonly start = new Uint32Array(4);
  private readonly end = new Uint32Array(4);
  private pending = false;

  constructor(private readonly emit: Ipv6BlockSink) {}

  /** Adds the inclusive range [first, last]; `first` must not be below the previous range's `first`. */
  add(first: ArrayLike<number>, last: ArrayLike<number> = first): void {
    if (compareWords(last, first) < 0) throw new RangeError("a range must not end before it starts");
    if (this.pending) {
      if (compareWords(first, this.start) < 0) throw new RangeError("IPv6 ranges must come in ascending order");
      if (compareWords(first, this.end) <= 0 || isSuccessor(first, this.end)) {
        if (compareWords(last, this.end) > 0) this.end.set(last as ArrayLike<number>);
        return;
      }
      emitIpv6Range(this.start, this.end, this.emit);
    }
    this.start.set(first as ArrayLike<number>);
    this.end.set(last as ArrayLike<number>);
    this.pending = true;
  }

  finish(): void {
    if (this.pending) emitIpv6Range(this.start, this.end, this.emit);
    this.pending = false;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Typed convenience: addresses and networks in, CIDRs out.

/**
 * The smallest set of CIDR blocks covering exactly the given addresses and networks. Input: IPv4 items, then
 * IPv6 items, each family ascending by first address (the order of `compareIp`); duplicates and overlaps are
 * fine. Output: the blocks in the same order, yielded as soon as each is known.
 */
export function* aggregateCidrs(items: Iterable<Ip | Cidr>): Generator<Cidr> {
  const ready: Cidr[] = [];
  const v4 = new Ipv4CidrAggregator((network, prefixLength) => {
    const ip = ipv4FromNumber(network);
    ready.push({ version: 4, network: ip, prefixLength, text: `${ip.text}/${prefixLength}` });
  });
  const v6 = new Ipv6CidrAggregator((words, prefixLength) => {
    const ip = ipFromWords(words);
    // A block inside ::ffff:0:0/96 normalizes to IPv4; keep it as the IPv6 block it is.
    const network = ip.version === 6 ? ip : { version: 6 as const, words: Uint32Array.from(words), text: formatIpv6(words) };
    ready.push({ version: 6, network, prefixLength, text: `${network.text}/${prefixLength}` });
  });
  let sawIpv6 = false;
  for (const item of items) {
    const isCidr = "prefixLength" in item;
    const ip = isCidr ? item.network : item;
    if (ip.version === 4) {
      if (sawIpv6) throw new RangeError("IPv4 items must come before IPv6 items");
      const first = ip.value;
      const last = isCidr ? first + 2 ** (32 - item.prefixLength) - 1 : first;
      v4.add(first, last);
    } else {
      if (!sawIpv6) {
        v4.finish();
        sawIpv6 = true;
      }
      v6.add(ip.words, isCidr ? lastOfIpv6Network(ip.words, item.prefixLength) : ip.words);
    }
    while (ready.length > 0) yield ready.shift() as Cidr;
  }
  v4.finish();
  v6.finish();
  yield* ready;
}

// ---------------------------------------------------------------------------------------------------------
// A network less the networks inside it: what of a listed network stays on a blocklist around allowlisted
// networks (contract 5.10: allowlisted addresses never appear).

/**
 * Emits the blocks of `network`/`prefixLength` outside the `holes` (networks inside it, given to the visitor
 * ascending by first address, one holding others before them, as a radix tree's walk gives them), ascending.
 */
export function emitIpv4Outside(network: number, prefixLength: number, holes: (visit: (hole: number, holeLength: number) => void) => void, emit: Ipv4BlockSink): void {
  const last = network + 2 ** (32 - prefixLength) - 1;
  let next = network;
  holes((hole, holeLength) => {
    if (hole > next) emitIpv4Range(next, hole - 1, emit);
    const end = hole + 2 ** (32 - holeLength) - 1;
    if (end + 1 > next) next = end + 1;
  });
  if (next <= last) emitIpv4Range(next, last, emit);
}

/** emitIpv4Outside for IPv6 (a block's words are a scratch array: copy them to keep them). */
export function emitIpv6Outside(network: ArrayLike<number>, prefixLength: number, holes: (visit: (hole: ArrayLike<number>, holeLength: number) => void) => void, emit: Ipv6BlockSink): void {
  const last = lastOfIpv6Network(network, prefixLength);
  const next = Uint32Array.from(network as ArrayLike<number>);
  let pastTheTop = false;
  const end = new Uint32Array(4);
  const before = new Uint32Array(4);
  holes((hole, holeLength) => {
    if (pastTheTop) return;
    if (compareWords(hole, next) > 0) {
      before.set(hole as ArrayLike<number>);
      subtractOne(before);
      emitIpv6Range(next, before, emit);
    }
    lastOfIpv6Network(hole, holeLength, end);
    if (compareWords(end, next) >= 0) {
      next.set(end);
      pastTheTop = !addPowerOfTwo(next, 0);
    }
  });
  if (!pastTheTop && compareWords(next, last) <= 0) emitIpv6Range(next, last, emit);
}

/** a -= 1 (a is not zero). */
function subtractOne(a: Uint32Array): void {
  for (let i = 3; i >= 0; i--) {
    if (a[i] !== 0) {
      a[i] = a[i] - 1;
      return;
    }
    a[i] = 0xffffffff;
  }
}
