// The response cache of reputation answers (contract 5.2 and 5.9): each cached answer is the whole body of
// `GET /v1/ip/{ip}/reputation` (with `cached: true`) as UTF-8 bytes in one arena, found by the address (an
// IPv4 value, or an IPv6 address's normalized text) and valid until the time it was given (when the address's
// oldest counting report passes retention). `settle(now)`, at the start of each request, drops the answers
// expired by then (they are queued by time), so a lookup finds only valid answers without reading an expiry.
// Whoever changes what an answer says drops it (the index does, on every change of an address).
//
// Why bytes in one arena rather than strings: a bulk check copies up to 100 cached answers into one body. From
// an arena that is one copy of adjacent bytes per answer, found through one map lookup; a cached string costs
// three or four dependent memory loads before its characters, and the joined answer is encoded to UTF-8 again
// on the way out. A bulk of 100 went from 55 µs to under 20 µs.
//
// Layout: each record is two 8-byte floats (the answer's expiry, ms, and the sequence number of the `set` that
// made it) and the answer's bytes, in a slot of a multiple of 32 bytes. An answer is named by a handle,
// slotOffset * 2^21 + answerLength; the queues of expiries and arrivals name it by its sequence number, since a
// handle comes back when a slot is reused. A dropped answer's
// slot is reused by a later answer of the same slot size, so the arena holds about the live answers and never
// needs compacting (compacting 200,000 answers stalled the server for 140 ms). Slots dropped during a request
// are reused only after the next `settle()`, so handles taken in one request stay good through it. Single
// answers and assembled bodies (`beginBody` … `takeBody`, in the free space past the last slot) leave as views
// for a Response, which copies them at once: the arena is never read after the request that took the view.

import type { Ip } from "../../domain/ip";
import { ExpiryQueue } from "../../index/expiry-queue";
import { ArrivalQueue } from "./arrival-queue";

/** What the lookups return when no answer is cached (or the cached one has expired). */
export const NO_ANSWER = -1;

const LENGTH_BITS = 2 ** 21;
/** Answers longer than this are not cached (never seen: an answer is a few hundred bytes). */
const MAX_ANSWER_BYTES = LENGTH_BITS - 1;
/** A record's header: its expiry and the sequence number of the `set` that made it (two floats). */
const HEADER_BYTES = 16;
const SLOT_GRAIN = 32;
const INITIAL_ARENA_BYTES = 1 << 20;
/** Address space reserved for the arena: far more than 200,000 answers of a few hundred bytes take. */
const ARENA_RESERVE_BYTES = 2 ** 30;

export class AnswerCache {
  private bytes!: Buffer;
  /** The same memory as a plain Uint8Array, for the views handed out. */
  private plain!: Uint8Array;
  /** The same memory read as floats: the slot at byte offset o has its expiry at `times[o / 8]`, its sequence next. */
  private times!: Float64Array;
  /** The end of the slots ever handed out; past it is free space. */
  private top = 0;
  private liveBytes = 0;
  /** Free slot offsets by slot size / SLOT_GRAIN. */
  private free: number[][] = [];
  private freeBytes = 0;
  /** Handles of answers dropped since the last settle(): their slots are not reused before it. */
  private released: number[] = [];
  private readonly byIpv4 = new Map<number, number>();
  private readonly byText = new Map<string, number>();
  /** The answers that expire, by time (see ExpiryQueue). */
  private readonly expiries = new ExpiryQueue<number | string>();
  /** The answers in the order they were cached, for eviction (see ArrivalQueue). */
  private readonly arrivals = new ArrivalQueue<number | string>();
  /** Numbers each answer set: what the queues hold, as a handle comes back when its slot is reused. */
  private sequence = 0;
  /** Whether a queued (key, sequence) is still the cached answer of its key. */
  private readonly isCurrent = (key: number | string, sequence: number): boolean => {
    const handle = this.mapOf(key).get(key);
    return handle !== undefined && this.times[offsetOf(handle) / 8 + 1] === sequence;
  };
  private bodyAt = 0;
  /** Growths that copied the arena into a new buffer (none while the reserved address space lasts). */
  private copies = 0;

  /** `limit`: answers kept at most; past it, each new answer evicts the oldest one. */
  constructor(private readonly limit: number) {
    this.reset();
  }

  // -------------------------------------------------------------------------------------------------------
  // Lookups: a handle, or NO_ANSWER

  // Every answer found is valid at the time given to the last `settle()`, which drops the expired ones.

  /** The answer for an IPv4 address (by value). */
  ofIpv4(value: number): number {
    return this.byIpv4.get(value) ?? NO_ANSWER;
  }

  /** The answer for an IPv6 address by its normalized text (any other text finds nothing). */
  ofText(text: string): number {
    return this.byText.get(text) ?? NO_ANSWER;
  }

  of(ip: Ip): number {
    return ip.version === 4 ? this.ofIpv4(ip.value) : this.ofText(ip.text);
  }

  // -------------------------------------------------------------------------------------------------------
  // Setting and dropping

  /**
   * Caches the answer for `ip` (its body as text, or as UTF-8 bytes), valid until `expiresAt` (ms; Infinity for an
   * address with no reports).
   */
  set(ip: Ip, body: string | Uint8Array, expiresAt: number): void {
    this.drop(ip);
    if (this.size >= this.limit) {
      const oldest = this.arrivals.takeOldest(this.isCurrent);
      if (oldest !== undefined) this.dropFrom(this.mapOf(oldest), oldest);
    }
    const length = typeof body === "string" ? Buffer.byteLength(body, "utf8") : body.length;
    if (length > MAX_ANSWER_BYTES) return;
    const size = slotBytes(length);
    const offset = this.allocate(size);
    const sequence = ++this.sequence;
    this.times[offset / 8] = expiresAt;
    this.times[offset / 8 + 1] = sequence;
    if (typeof body === "string") this.bytes.write(body, offset + HEADER_BYTES, length, "utf8");
    else this.plain.set(body, offset + HEADER_BYTES);
    this.liveBytes += size;
    const handle = offset * LENGTH_BITS + length;
    const key = ip.version === 4 ? ip.value : ip.text;
    if (typeof key === "number") this.byIpv4.set(key, handle);
    else this.byText.set(key, handle);
    this.arrivals.push(key, sequence);
    // Dropped answers leave their entries behind: keep only the current ones when they are most of the queue.
    if (this.arrivals.size > 2 * this.size + 1024) this.arrivals.retain(this.isCurrent);
    if (expiresAt < Number.POSITIVE_INFINITY) {
      this.expiries.push(expiresAt, key, sequence);
      // Replaced and dropped answers leave their entries behind: start the queue over when they are most of it.
      if (this.expiries.size > 2 * this.size + 1024) this.requeueExpiries();
    }
  }

  /** Forgets the answer for `ip`: the index calls this whenever the address changes, enters or leaves. */
  drop(ip: Ip): void {
    if (ip.version === 4) this.dropFrom(this.byIpv4, ip.value);
    else this.dropFrom(this.byText, ip.text);
  }

  clear(): void {
    this.byIpv4.clear();
    this.byText.clear();
    this.reset();
  }

  get size(): number {
    return this.byIpv4.size + this.byText.size;
  }

  /**
   * Call at the start of each request, with its time: answers expired by then are dropped, and the slots of
   * answers dropped since the last call become free for new answers, so handles taken before are stale after
   * it. When free slots outweigh the live answers (many dropped, few asked for since), the cache starts over in
   * a small arena rather than keep the space.
   */
  settle(now: number): void {
    if (now > this.expiries.earliest) {
      this.expiries.popBefore(now, (key, sequence) => {
        if (this.isCurrent(key, sequence)) this.dropFrom(this.mapOf(key), key);
      });
    }
    if (this.released.length === 0) return;
    for (const handle of this.released) {
      const size = slotBytes(lengthOf(handle));
      (this.free[size / SLOT_GRAIN] ??= []).push(offsetOf(handle));
      this.freeBytes += size;
    }
    this.released.length = 0;
    if (this.freeBytes > INITIAL_ARENA_BYTES && this.freeBytes > this.liveBytes) this.clear();
  }

  // -------------------------------------------------------------------------------------------------------
  // Reading answers

  /**
   * The answer's bytes as a view of the arena, good until the next `settle()`: for a Response body, which Bun
   * copies when the Response is made (test/http/response-body-copy.test.ts holds it to that).
   */
  viewOf(handle: number): Uint8Array {
    const start = offsetOf(handle) + HEADER_BYTES;
    return this.plain.subarray(start, start + lengthOf(handle));
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

  /** Appends `source`'s bytes from `from` to `to`, from outside the arena (for the arena's own: putAnswer). */
  putSlice(source: Buffer, from: number, to: number): void {
    this.bodyAt += source.copy(this.bytes, this.bodyAt, from, to);
  }

  putByte(byte: number): void {
    this.bytes[this.bodyAt++] = byte;
  }

  /** The assembled body as a view of the arena, good until the next answer or body (see `viewOf`). */
  takeBody(): Uint8Array {
    return this.plain.subarray(this.top, this.bodyAt);
  }

  // -------------------------------------------------------------------------------------------------------
  // Space

  get arenaBytes(): number {
    return this.bytes.byteLength;
  }

  /** How many times growing the arena copied it (see ensureRoom). */
  get growthCopies(): number {
    return this.copies;
  }

  private mapOf(key: number | string): Map<number | string, number> {
    return (typeof key === "number" ? this.byIpv4 : this.byText) as Map<number | string, number>;
  }

  private dropFrom<K>(map: Map<K, number>, key: K): void {
    const handle = map.get(key);
    if (handle === undefined) return;
    map.delete(key);
    this.liveBytes -= slotBytes(lengthOf(handle));
    this.released.push(handle);
  }

  /** A slot of `size` bytes: a free one of that size, else one past the last. */
  private allocate(size: number): number {
    const reused = this.free[size / SLOT_GRAIN]?.pop();
    if (reused !== undefined) {
      this.freeBytes -= size;
      return reused;
    }
    this.ensureRoom(size);
    const offset = this.top;
    this.top += size;
    return offset;
  }

  /**
   * Makes room for `size` more bytes past `top` (offsets kept). The arena grows in place inside its reserved
   * address space; only past the reservation (or where none could be had) is it copied into a new buffer.
   */
  private ensureRoom(size: number): void {
    if (this.top + size <= this.bytes.byteLength) return;
    const old = this.plain;
    // Growth by half, not doubling: at the limit the live answers are tens of megabytes, and a small box
    // feels every spare one (a resize commits no memory, but the pages written stay).
    const grown = Math.ceil(Math.max(this.top + size, old.byteLength * 1.5) / SLOT_GRAIN) * SLOT_GRAIN;
    const memory = this.plain.buffer as ArrayBuffer;
    if (memory.resizable && grown <= memory.maxByteLength) {
      memory.resize(grown);
      this.viewArena(memory);
      return;
    }
    this.useArena(grown);
    this.plain.set(old.subarray(0, this.top));
    this.copies++;
  }

  /**
   * A new arena of `size` bytes, reserving address space for ARENA_RESERVE_BYTES so that growth is a resize, not
   * a copy: copying tens of megabytes held the event loop 10-25 ms. The reservation commits no memory.
   */
  private useArena(size: number): void {
    let memory: ArrayBuffer;
    try {
      memory = new ArrayBuffer(size, { maxByteLength: Math.max(size, ARENA_RESERVE_BYTES) });
    } catch {
      memory = new ArrayBuffer(size); // no address space to reserve (a ulimit -v): growth copies
    }
    this.viewArena(memory);
  }

  private viewArena(memory: ArrayBuffer): void {
    this.bytes = Buffer.from(memory, 0, memory.byteLength);
    this.plain = new Uint8Array(memory, 0, memory.byteLength);
    this.times = new Float64Array(memory, 0, memory.byteLength / 8);
  }

  /** Queues the expiry of every live answer again, without the entries of answers gone since. */
  private requeueExpiries(): void {
    this.expiries.clear();
    const queue = (key: number | string, handle: number) => {
      const at = offsetOf(handle) / 8;
      if (this.times[at] < Number.POSITIVE_INFINITY) this.expiries.push(this.times[at], key, this.times[at + 1]);
    };
    this.byIpv4.forEach((handle, key) => queue(key, handle));
    this.byText.forEach((handle, key) => queue(key, handle));
  }

  /** An empty cache in a small arena. */
  private reset(): void {
    this.expiries.clear();
    this.arrivals.clear();
    this.useArena(INITIAL_ARENA_BYTES);
    this.top = 0;
    this.liveBytes = 0;
    this.free = [];
    this.freeBytes = 0;
    this.released.length = 0;
  }
}

const slotBytes = (answerLength: number): number => Math.ceil((HEADER_BYTES + answerLength) / SLOT_GRAIN) * SLOT_GRAIN;
// Multiplying by the exact reciprocal of a power of two, not `%`: a double's remainder is a slow call.
const offsetOf = (handle: number): number => Math.floor(handle * (1 / LENGTH_BITS));
export const lengthOf = (handle: number): number => handle - offsetOf(handle) * LENGTH_BITS;
