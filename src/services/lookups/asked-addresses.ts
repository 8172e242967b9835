// The addresses asked for recently, as a set of plain numbers: what gives an unreported address's answer its
// `cached` flag (asked before, and nothing about it changed since) without keeping an answer for it. A firewall's
// or a middleware's traffic is mostly addresses nobody reported, each asked once or twice: a cached answer per
// address would cost an entry, its bytes and later its eviction for every one of them.
//
// Open addressing with linear probing in typed arrays (IPv4: one word a slot, IPv6: four), so nothing here is
// garbage for the collector. A table grows by doubling up to its limit; past that, the set keeps two generations:
// when the current one is half full it becomes the previous one and a cleared table takes its place, so the
// addresses asked in the last one to two generations are remembered and no eviction is ever done one by one.
// Removal (the address changed) shifts the following entries back, so no tombstones accumulate.

/**
 * Slots of one generation's table at most (half of them used): 2^19 IPv4 slots is 2 MiB, so the 256k to 512k
 * addresses asked last are remembered, and the tables stay small enough to be mostly in the processor's cache.
 */
const DEFAULT_MAX_SLOTS = 1 << 19;
const INITIAL_SLOTS = 1 << 12;

/** Drawn once per process, so where an address lands in the tables cannot be known from outside. */
const HASH_SEED = crypto.getRandomValues(new Uint32Array(1))[0];

/** MurmurHash3's 32-bit finalizer: every input bit reaches every output bit. */
function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A set of 32-bit keys. Key 0 (0.0.0.0, ::) marks an empty slot, so it is kept aside in a flag. */
class KeyTable {
  keys: Uint32Array;
  mask: number;
  size = 0;
  private hasZero = false;

  constructor(
    slots: number,
    /** Words per key: 1 (IPv4) or 4 (IPv6). */
    private readonly width: 1 | 4,
  ) {
    this.keys = new Uint32Array(slots * width);
    this.mask = slots - 1;
  }

  get slots(): number {
    return this.mask + 1;
  }

  /** The slot holding the key at `key[at..]`, or -1. */
  find(key: ArrayLike<number>, at: number): number {
    if (this.isZero(key, at)) return this.hasZero ? this.slots : -1;
    const keys = this.keys;
    const w = this.width;
    for (let slot = this.home(key, at); ; slot = (slot + 1) & this.mask) {
      const o = slot * w;
      if (keys[o] === 0 && (w === 1 || (keys[o + 1] | keys[o + 2] | keys[o + 3]) === 0)) return -1;
      if (keys[o] === key[at] >>> 0 && (w === 1 || (keys[o + 1] === key[at + 1] >>> 0 && keys[o + 2] === key[at + 2] >>> 0 && keys[o + 3] === key[at + 3] >>> 0))) return slot;
    }
  }

  /** Adds the key (the caller checked it is absent and that there is room). */
  add(key: ArrayLike<number>, at: number): void {
    this.size++;
    if (this.isZero(key, at)) {
      this.hasZero = true;
      return;
    }
    const keys = this.keys;
    const w = this.width;
    let slot = this.home(key, at);
    while (!this.isEmpty(slot)) slot = (slot + 1) & this.mask;
    for (let k = 0; k < w; k++) keys[slot * w + k] = key[at + k];
  }

  /** Removes the key if present (backward-shift deletion). */
  remove(key: ArrayLike<number>, at: number): void {
    const found = this.find(key, at);
    if (found < 0) return;
    this.size--;
    if (found === this.slots) {
      this.hasZero = false;
      return;
    }
    const keys = this.keys;
    const w = this.width;
    let hole = found;
    for (let slot = (hole + 1) & this.mask; !this.isEmpty(slot); slot = (slot + 1) & this.mask) {
      const home = this.home(keys, slot * w);
      // The entry at `slot` may move into the hole unless its home lies cyclically in (hole, slot].
      const stays = hole <= slot ? home > hole && home <= slot : home > hole || home <= slot;
      if (stays) continue;
      keys.copyWithin(hole * w, slot * w, slot * w + w);
      hole = slot;
    }
    keys.fill(0, hole * w, hole * w + w);
  }

  clear(): void {
    this.keys.fill(0);
    this.size = 0;
    this.hasZero = false;
  }

  /** Every key, for a rehash into a larger table. */
  forEach(visit: (keys: Uint32Array, at: number) => void): void {
    if (this.hasZero) visit(new Uint32Array(this.width), 0);
    for (let slot = 0; slot <= this.mask; slot++) if (!this.isEmpty(slot)) visit(this.keys, slot * this.width);
  }

  private isEmpty(slot: number): boolean {
    const o = slot * this.width;
    return this.keys[o] === 0 && (this.width === 1 || (this.keys[o + 1] | this.keys[o + 2] | this.keys[o + 3]) === 0);
  }

  private isZero(key: ArrayLike<number>, at: number): boolean {
    return key[at] === 0 && (this.width === 1 || (key[at + 1] | key[at + 2] | key[at + 3]) === 0);
  }

  /**
   * The key's first slot: each word mixed in with MurmurHash3's finalizer, starting from this process's random
   * seed. Clients choose the addresses they ask about: with a fixed hash they could pick a stream of addresses
   * that all start at one slot, and every lookup would walk their cluster (a review measured 84 µs an address
   * after 64,000 of them, against 0.2 µs).
   */
  private home(key: ArrayLike<number>, at: number): number {
    let h = mix32(HASH_SEED ^ key[at]);
    if (this.width === 4) {
      h = mix32(h ^ key[at + 1]);
      h = mix32(h ^ key[at + 2]);
      h = mix32(h ^ key[at + 3]);
    }
    return h & this.mask;
  }
}

/** A set of keys of one width, growing to `maxSlots`, then kept as two generations (see the file's comment). */
class Generations {
  private current: KeyTable;
  private previous: KeyTable | null = null;

  constructor(
    private readonly width: 1 | 4,
    private readonly maxSlots: number,
  ) {
    this.current = new KeyTable(Math.min(INITIAL_SLOTS, maxSlots), width);
  }

  /** Whether the key was in the set; it is in the set afterwards. */
  mark(key: ArrayLike<number>, at: number): boolean {
    if (this.current.find(key, at) >= 0) return true;
    const before = this.previous !== null && this.previous.find(key, at) >= 0;
    this.makeRoom();
    this.current.add(key, at);
    return before;
  }

  remove(key: ArrayLike<number>, at: number): void {
    this.current.remove(key, at);
    this.previous?.remove(key, at);
  }

  /**
   * Empties the set. An empty set stays as it is: a feed import clears it once per network it lists (tens of
   * thousands of times), and a fresh table each time was most of the import's time.
   */
  clear(): void {
    if (this.size === 0) return;
    this.current = new KeyTable(Math.min(INITIAL_SLOTS, this.maxSlots), this.width);
    this.previous = null;
  }

  get size(): number {
    return this.current.size + (this.previous?.size ?? 0);
  }

  private makeRoom(): void {
    const table = this.current;
    if (2 * (table.size + 1) <= table.slots) return;
    if (table.slots < this.maxSlots) {
      const larger = new KeyTable(table.slots * 2, this.width);
      table.forEach((keys, at) => larger.add(keys, at));
      this.current = larger;
      return;
    }
    // At the limit: the current generation becomes the previous one, and the old previous table is reused.
    const reused = this.previous ?? new KeyTable(this.maxSlots, this.width);
    reused.clear();
    this.previous = table;
    this.current = reused;
  }
}

export class AskedAddresses {
  private readonly v4: Generations;
  private readonly v6: Generations;
  private readonly one = new Uint32Array(1);

  /** `maxSlots`: slots of one generation's table per family at most (a power of two). */
  constructor(maxSlots = DEFAULT_MAX_SLOTS) {
    this.v4 = new Generations(1, maxSlots);
    this.v6 = new Generations(4, maxSlots >>> 2 || 1);
  }

  /** Whether the IPv4 address (its value) was asked for since it last changed; it counts as asked from now on. */
  markIpv4(value: number): boolean {
    this.one[0] = value;
    return this.v4.mark(this.one, 0);
  }

  /** The same for an IPv6 address's four words. */
  markIpv6(words: ArrayLike<number>): boolean {
    return this.v6.mark(words, 0);
  }

  forgetIpv4(value: number): void {
    this.one[0] = value;
    this.v4.remove(this.one, 0);
  }

  forgetIpv6(words: ArrayLike<number>): void {
    this.v6.remove(words, 0);
  }

  clear(): void {
    this.v4.clear();
    this.v6.clear();
  }

  get size(): number {
    return this.v4.size + this.v6.size;
  }
}
