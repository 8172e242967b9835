// The response cache of reputation answers (contract 5.2 and 5.9): each cached answer is the whole body of
// `GET /v1/ip/{ip}/reputation` (with `cached: true`) as UTF-8 bytes in one arena, found by the address (an
// IPv4 value, or an IPv6 address's normalized text) and valid until the time it was given (when the address's
// oldest counting report passes retention). Whoever changes what an answer says drops it (the index does, on
// every change of an address).
//
// Why bytes in one arena rather than strings: a bulk check copies up to 100 cached answers into one body. From
// an arena that is one copy of adjacent bytes per answer, found through one map lookup; a cached string costs
// three or four dependent memory loads before its characters, and the joined answer is encoded to UTF-8 again
// on the way out. A bulk of 100 went from 55 µs to under 20 µs.
//
// Layout: each record is an 8-byte float (the answer's expiry, ms) and the answer's bytes, starting 8-aligned.
// An answer is named by a handle, recordOffset * 2^21 + answerLength. The arena is append-only: bytes once
// written never change, so a handle stays good until the next `compactIfWasteful()`, and a view handed to a
// Response stays good for as long as the Response holds it (growing and compacting move to a new buffer and
// leave the old one alone). A body being assembled (`beginBody` … `takeBody`) uses the free space past the
// last record and is copied out, so it does not stay in the arena.

import type { Ip } from "../domain/ip";

/** What the lookups return when no answer is cached (or the cached one has expired). */
export const NO_ANSWER = -1;

const LENGTH_BITS = 2 ** 21;
/** Answers longer than this are not cached (never seen: an answer is a few hundred bytes). */
const MAX_ANSWER_BYTES = LENGTH_BITS - 1;
const HEADER_BYTES = 8;
const INITIAL_ARENA_BYTES = 1 << 20;

export class AnswerCache {
  private bytes!: Buffer;
  /** The same memory as a plain Uint8Array: its slice() makes a copy without Buffer's constructor. */
  private plain!: Uint8Array;
  /** The same memory as `bytes`, read as floats: the expiry of the record at byte offset o is `times[o / 8]`. */
  private times!: Float64Array;
  private top = 0;
  /** Bytes of the records still reachable; the rest below `top` is waste that `compactIfWasteful()` drops. */
  private liveBytes = 0;
  private readonly byIpv4 = new Map<number, number>();
  private readonly byText = new Map<string, number>();
  private bodyAt = 0;

  /** `limit`: answers kept at most; past it, each new answer evicts an old one (see setIn). */
  constructor(private readonly limit: number) {
    this.useArena(INITIAL_ARENA_BYTES);
  }

  // -------------------------------------------------------------------------------------------------------
  // Lookups: a handle, or NO_ANSWER

  /** The answer for an IPv4 address (by value), if cached and still valid at `now`. */
  ofIpv4(value: number, now: number): number {
    return this.valid(this.byIpv4.get(value), now);
  }

  /** The answer for an IPv6 address by its normalized text (any other text finds nothing). */
  ofText(text: string, now: number): number {
    return this.valid(this.byText.get(text), now);
  }

  of(ip: Ip, now: number): number {
    return ip.version === 4 ? this.ofIpv4(ip.value, now) : this.ofText(ip.text, now);
  }

  private valid(handle: number | undefined, now: number): number {
    if (handle === undefined || now > this.times[offsetOf(handle) / HEADER_BYTES]) return NO_ANSWER;
    return handle;
  }

  // -------------------------------------------------------------------------------------------------------
  // Setting and dropping

  /** Caches the answer for `ip`, valid until `expiresAt` (ms; Infinity for an address with no reports). */
  set(ip: Ip, body: string, expiresAt: number): void {
    if (ip.version === 4) this.setIn(this.byIpv4, ip.value, body, expiresAt);
    else this.setIn(this.byText, ip.text, body, expiresAt);
  }

  /** Forgets the answer for `ip`: the index calls this whenever the address changes, enters or leaves. */
  drop(ip: Ip): void {
    if (ip.version === 4) this.dropFrom(this.byIpv4, ip.value);
    else this.dropFrom(this.byText, ip.text);
  }

  clear(): void {
    this.byIpv4.clear();
    this.byText.clear();
    this.useArena(INITIAL_ARENA_BYTES);
  }

  get size(): number {
    return this.byIpv4.size + this.byText.size;
  }

  // -------------------------------------------------------------------------------------------------------
  // Reading answers

  /** The answer's bytes, as a view that stays valid (the bytes never change). */
  view(handle: number): Uint8Array {
    const start = offsetOf(handle) + HEADER_BYTES;
    return this.bytes.subarray(start, start + lengthOf(handle));
  }

  /** Starts assembling a body of at most `size` bytes (no answer may be set until `takeBody`). */
  beginBody(size: number): void {
    this.ensureRoom(size);
    this.bodyAt = this.top;
  }

  /** Appends a cached answer to the body, without its first `skipHead` and last `skipTail` bytes. */
  putAnswer(handle: number, skipHead: number, skipTail: number): void {
    const start = offsetOf(handle) + HEADER_BYTES;
    const end = start + lengthOf(handle) - skipTail;
    // copyWithin inside one buffer: the cheapest copy there is, with no view or argument checks per answer.
    this.bytes.copyWithin(this.bodyAt, start + skipHead, end);
    this.bodyAt += end - start - skipHead;
  }

  putText(text: string): void {
    this.bodyAt += this.bytes.write(text, this.bodyAt, "utf8");
  }

  putByte(byte: number): void {
    this.bytes[this.bodyAt++] = byte;
  }

  /** The assembled body, copied out of the arena. */
  takeBody(): Uint8Array {
    return this.plain.slice(this.top, this.bodyAt);
  }

  // -------------------------------------------------------------------------------------------------------
  // Space

  get arenaBytes(): number {
    return this.bytes.byteLength;
  }

  /**
   * Moves the live answers to a fresh arena when more than half of the bytes written are waste. Handles taken
   * before are stale after it: call it only between requests, never while holding handles.
   */
  compactIfWasteful(): boolean {
    if (this.top < INITIAL_ARENA_BYTES || this.liveBytes * 2 > this.top) return false;
    const old = this.bytes;
    this.useArena(Math.max(INITIAL_ARENA_BYTES, nextPowerOfTwo(this.liveBytes * 2)));
    const move = (handle: number): number => {
      const offset = offsetOf(handle);
      const size = recordBytes(lengthOf(handle));
      old.copy(this.bytes, this.top, offset, offset + size);
      const moved = this.top * LENGTH_BITS + lengthOf(handle);
      this.top += size;
      return moved;
    };
    for (const [key, handle] of this.byIpv4) this.byIpv4.set(key, move(handle));
    for (const [key, handle] of this.byText) this.byText.set(key, move(handle));
    this.liveBytes = this.top;
    return true;
  }

  private setIn<K>(map: Map<K, number>, key: K, body: string, expiresAt: number): void {
    this.dropFrom(map, key);
    if (this.size >= this.limit) {
      // The oldest answer of one kind goes (a Map keeps insertion order), the kind chosen at random in
      // proportion to the kinds' sizes, so each keeps a share like its share of new answers.
      const from: Map<unknown, number> = Math.random() * this.size < this.byIpv4.size ? this.byIpv4 : this.byText;
      this.dropFrom(from, from.keys().next().value);
    }
    const length = Buffer.byteLength(body, "utf8");
    if (length > MAX_ANSWER_BYTES) return;
    const size = recordBytes(length);
    this.ensureRoom(size);
    const offset = this.top;
    this.times[offset / HEADER_BYTES] = expiresAt;
    this.bytes.write(body, offset + HEADER_BYTES, length, "utf8");
    this.top += size;
    this.liveBytes += size;
    map.set(key, offset * LENGTH_BITS + length);
  }

  private dropFrom<K>(map: Map<K, number>, key: K): void {
    const old = map.get(key);
    if (old === undefined) return;
    this.liveBytes -= recordBytes(lengthOf(old));
    map.delete(key);
  }

  /** Makes room for `size` more bytes past `top`, growing into a new buffer (old bytes copied, offsets kept). */
  private ensureRoom(size: number): void {
    if (this.top + size <= this.bytes.byteLength) return;
    const old = this.bytes;
    const top = this.top;
    const live = this.liveBytes;
    this.useArena(nextPowerOfTwo(top + size));
    old.copy(this.bytes, 0, 0, top);
    this.top = top;
    this.liveBytes = live;
  }

  private useArena(size: number): void {
    const memory = new ArrayBuffer(size);
    this.bytes = Buffer.from(memory);
    this.plain = new Uint8Array(memory);
    this.times = new Float64Array(memory);
    this.top = 0;
    this.liveBytes = 0;
  }
}

const recordBytes = (answerLength: number): number => Math.ceil((HEADER_BYTES + answerLength) / 8) * 8;
// Multiplying by the exact reciprocal of a power of two, not `%`: a double's remainder is a slow call.
const offsetOf = (handle: number): number => Math.floor(handle * (1 / LENGTH_BITS));
export const lengthOf = (handle: number): number => handle - offsetOf(handle) * LENGTH_BITS;
const nextPowerOfTwo = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, n)));
