// The response cache of reputation answers (contract 5.2 and 5.9): each cached answer is the whole body of
// `GET /v1/ip/{ip}/reputation` (with `cached: true`) as UTF-8 bytes in one arena. Reported addresses are kept
// by index slot (the index says when a slot changes), unknown addresses by their value (IPv4) or text (IPv6).
//
// Why bytes in one arena rather than strings: a bulk check copies up to 100 cached answers into one body. From
// an arena that is a native copy of adjacent bytes per answer, found through one number; a cached string costs
// three or four dependent memory loads before its characters, and the joined string is encoded to UTF-8 again
// on the way out. Measured on 100 scattered addresses: 55 µs with strings, 20 µs with the arena.
//
// An answer is named by a handle, offset * 2^21 + length. The arena is append-only: bytes once written never
// change, so a handle stays good until the next `compact()`, and a view handed to a Response stays good for as
// long as the Response holds it (growing or compacting moves to a new buffer and leaves the old one alone).

/** What the lookups return when no answer is cached. */
export const NO_ANSWER = -1;

const LENGTH_BITS = 2 ** 21;
/** Answers longer than this are not cached (never seen: an answer is a few hundred bytes). */
const MAX_ANSWER_BYTES = LENGTH_BITS - 1;
const INITIAL_ARENA_BYTES = 1 << 20;

export class AnswerCache {
  private arena: Buffer = Buffer.allocUnsafe(INITIAL_ARENA_BYTES);
  private top = 0;
  /** Bytes of the answers still reachable; the rest below `top` is waste that `compact()` drops. */
  private liveBytes = 0;
  private slotHandles = new Float64Array(1024).fill(NO_ANSWER);
  private slotCount = 0;
  private readonly unknownV4 = new Map<number, number>();
  private readonly unknownText = new Map<string, number>();

  /** `limit`: answers kept at most, for reported and for unknown addresses each. */
  constructor(private readonly limit: number) {}

  // -------------------------------------------------------------------------------------------------------
  // Lookups: a handle, or NO_ANSWER

  ofSlot(slot: number): number {
    return slot < this.slotHandles.length ? this.slotHandles[slot] : NO_ANSWER;
  }

  ofUnknownV4(value: number): number {
    return this.unknownV4.get(value) ?? NO_ANSWER;
  }

  ofUnknownText(text: string): number {
    return this.unknownText.get(text) ?? NO_ANSWER;
  }

  // -------------------------------------------------------------------------------------------------------
  // Setting and dropping

  setSlot(slot: number, body: string): void {
    if (slot >= this.slotHandles.length) this.growSlots(slot + 1);
    const old = this.slotHandles[slot];
    if (old === NO_ANSWER && this.slotCount >= this.limit) this.dropAllSlots();
    const handle = this.append(body);
    if (handle === NO_ANSWER) return;
    if (old !== NO_ANSWER) this.liveBytes -= lengthOf(old);
    else this.slotCount++;
    this.slotHandles[slot] = handle;
  }

  /** Forgets a slot's answer: the index calls this whenever the slot's address changes or leaves. */
  dropSlot(slot: number): void {
    if (slot >= this.slotHandles.length) return;
    const old = this.slotHandles[slot];
    if (old === NO_ANSWER) return;
    this.liveBytes -= lengthOf(old);
    this.slotHandles[slot] = NO_ANSWER;
    this.slotCount--;
  }

  setUnknownV4(value: number, body: string): void {
    this.setUnknown(this.unknownV4, value, body);
  }

  setUnknownText(text: string, body: string): void {
    this.setUnknown(this.unknownText, text, body);
  }

  /** Forgets an unknown address's answer (it has just been reported). */
  dropUnknownV4(value: number): void {
    this.dropFrom(this.unknownV4, value);
  }

  dropUnknownText(text: string): void {
    this.dropFrom(this.unknownText, text);
  }

  clear(): void {
    this.slotHandles.fill(NO_ANSWER);
    this.slotCount = 0;
    this.unknownV4.clear();
    this.unknownText.clear();
    this.liveBytes = 0;
    this.top = 0;
    this.arena = Buffer.allocUnsafe(INITIAL_ARENA_BYTES);
  }

  // -------------------------------------------------------------------------------------------------------
  // Reading answers

  /** The answer's bytes, as a view that stays valid (the bytes never change). */
  view(handle: number): Uint8Array {
    const offset = offsetOf(handle);
    return this.arena.subarray(offset, offset + lengthOf(handle));
  }

  /** Copies the answer's bytes without the first `skipHead` and last `skipTail` into `target` at `at`. */
  copyInto(handle: number, skipHead: number, skipTail: number, target: Buffer, at: number): number {
    const offset = offsetOf(handle);
    return this.arena.copy(target, at, offset + skipHead, offset + lengthOf(handle) - skipTail);
  }

  // -------------------------------------------------------------------------------------------------------
  // Space

  /** Cached answers (reported, unknown). */
  get counts(): { reported: number; unknown: number } {
    return { reported: this.slotCount, unknown: this.unknownV4.size + this.unknownText.size };
  }

  get arenaBytes(): number {
    return this.arena.byteLength;
  }

  /**
   * Moves the live answers to a fresh arena when more than half of the bytes written are waste. Handles taken
   * before are stale after it: call it only between requests, never while holding handles.
   */
  compactIfWasteful(): boolean {
    if (this.top < INITIAL_ARENA_BYTES || this.liveBytes * 2 > this.top) return false;
    const old = this.arena;
    const fresh = Buffer.allocUnsafe(Math.max(INITIAL_ARENA_BYTES, nextPowerOfTwo(this.liveBytes * 2)));
    let top = 0;
    const move = (handle: number): number => {
      const length = lengthOf(handle);
      const offset = offsetOf(handle);
      old.copy(fresh, top, offset, offset + length);
      const moved = top * LENGTH_BITS + length;
      top += length;
      return moved;
    };
    const slots = this.slotHandles;
    for (let slot = 0; slot < slots.length; slot++) if (slots[slot] !== NO_ANSWER) slots[slot] = move(slots[slot]);
    for (const [key, handle] of this.unknownV4) this.unknownV4.set(key, move(handle));
    for (const [key, handle] of this.unknownText) this.unknownText.set(key, move(handle));
    this.arena = fresh;
    this.top = top;
    return true;
  }

  private setUnknown<K>(map: Map<K, number>, key: K, body: string): void {
    this.dropFrom(map, key);
    const unknowns = this.unknownV4.size + this.unknownText.size;
    if (unknowns >= this.limit) {
      // The oldest entry goes first (a Map keeps insertion order).
      const oldest = map.size > 0 ? map : map === this.unknownV4 ? this.unknownText : this.unknownV4;
      this.dropFrom(oldest as Map<unknown, number>, oldest.keys().next().value);
    }
    const handle = this.append(body);
    if (handle !== NO_ANSWER) map.set(key, handle);
  }

  private dropFrom<K>(map: Map<K, number>, key: K): void {
    const old = map.get(key);
    if (old === undefined) return;
    this.liveBytes -= lengthOf(old);
    map.delete(key);
  }

  private dropAllSlots(): void {
    for (let slot = 0; slot < this.slotHandles.length; slot++) this.dropSlot(slot);
  }

  /** Writes the body at the end of the arena (growing it, old bytes kept in place) and returns its handle. */
  private append(body: string): number {
    const length = Buffer.byteLength(body, "utf8");
    if (length > MAX_ANSWER_BYTES) return NO_ANSWER;
    if (this.top + length > this.arena.byteLength) {
      const grown = Buffer.allocUnsafe(nextPowerOfTwo(this.top + length));
      this.arena.copy(grown, 0, 0, this.top);
      this.arena = grown;
    }
    const offset = this.top;
    this.arena.write(body, offset, length, "utf8");
    this.top += length;
    this.liveBytes += length;
    return offset * LENGTH_BITS + length;
  }

  private growSlots(needed: number): void {
    const grown = new Float64Array(Math.max(needed, this.slotHandles.length * 2)).fill(NO_ANSWER);
    grown.set(this.slotHandles);
    this.slotHandles = grown;
  }
}

// Multiplying by the exact reciprocal of a power of two, not `%`: a double's remainder is a slow call.
const offsetOf = (handle: number): number => Math.floor(handle * (1 / LENGTH_BITS));
export const lengthOf = (handle: number): number => handle - offsetOf(handle) * LENGTH_BITS;
const nextPowerOfTwo = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, n)));
