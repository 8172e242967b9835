// Writes ASCII text straight into byte chunks of about a fixed size: the blocklist renderers fill one chunk per
// pull of a stream. Every byte of every format is ASCII (addresses, numbers, category names, ISO dates), so no
// string is built or encoded per address: a million IPv4 lines cost a few tens of milliseconds.

import { formatIpv6 } from "../ip";

/** Room past the target: the largest single write (one aggregated IPv6 range, up to 254 blocks) fits in it. */
const SLACK = 16 * 1024;

const DAY_MS = 86_400_000;

/** OCTET[4 * o]: the number of digits of o, then its digits as ASCII. */
const OCTET = new Uint8Array(256 * 4);
for (let o = 0; o < 256; o++) {
  const digits = String(o);
  OCTET[4 * o] = digits.length;
  for (let i = 0; i < digits.length; i++) OCTET[4 * o + 1 + i] = digits.charCodeAt(i);
}

export class ChunkWriter {
  /** The chunk being filled; `pos` bytes of it are written. */
  buf: Uint8Array;
  pos = 0;

  constructor(readonly target = 64 * 1024) {
    this.buf = new Uint8Array(target + SLACK);
  }

  /** True once the chunk has reached its target size: the renderer stops and the chunk goes out. */
  get full(): boolean {
    return this.pos >= this.target;
  }

  /** The bytes written so far (a view, not a copy); a fresh chunk starts behind it. */
  take(): Uint8Array {
    const out = this.buf.subarray(0, this.pos);
    this.buf = new Uint8Array(this.target + SLACK);
    this.pos = 0;
    return out;
  }

  /** Makes room for `n` more bytes (only a long run of writes between `full` checks needs it). */
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    bigger.set(this.buf.subarray(0, this.pos));
    this.buf = bigger;
  }

  byte(c: number): void {
    this.ensure(1);
    this.buf[this.pos++] = c;
  }

  /** An ASCII string (callers never pass anything else). */
  ascii(s: string): void {
    const n = s.length;
    this.ensure(n);
    const b = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) b[p++] = s.charCodeAt(i);
    this.pos = p;
  }

  /** A non-negative integer (below 2^53) in decimal, with no string made for it. */
  uint(n: number): void {
    let digits = 1;
    for (let power = 10; power <= n; power *= 10) digits++;
    this.ensure(digits);
    const b = this.buf;
    let rest = n;
    for (let p = this.pos + digits - 1; p >= this.pos; p--) {
      const next = Math.floor(rest / 10);
      b[p] = 48 + (rest - next * 10);
      rest = next;
    }
    this.pos += digits;
  }

  /** A dotted quad, from the address as an unsigned 32-bit number. */
  ipv4(value: number): void {
    this.ensure(15);
    const b = this.buf;
    let p = this.pos;
    for (let shift = 24; shift >= 0; shift -= 8) {
      const o = 4 * ((value >>> shift) & 255);
      const len = OCTET[o];
      b[p++] = OCTET[o + 1];
      if (len > 1) b[p++] = OCTET[o + 2];
      if (len > 2) b[p++] = OCTET[o + 3];
      if (shift !== 0) b[p++] = 46; // "."
    }
    this.pos = p;
  }

  /**
   * A time as `Date.prototype.toISOString` writes it (`2026-11-21T08:00:00.000Z`), without building a Date or a
   * string: the csv format writes one per row. Years outside 0000..9999 fall back to toISOString.
   */
  isoTime(ms: number): void {
    const days = Math.floor(ms / DAY_MS);
    let rest = ms - days * DAY_MS;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm, proleptic Gregorian).
    const z = days + 719468;
    const era = Math.floor(z / 146097);
    const doe = z - era * 146097;
    const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
    const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
    const mp = Math.floor((5 * doy + 2) / 153);
    const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
    const month = mp < 10 ? mp + 3 : mp - 9;
    const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
    if (!(year >= 0 && year <= 9999)) {
      this.ascii(new Date(ms).toISOString());
      return;
    }
    this.ensure(24);
    const b = this.buf;
    let p = this.pos;
    const two = (n: number) => {
      b[p++] = 48 + Math.floor(n / 10);
      b[p++] = 48 + (n % 10);
    };
    two(Math.floor(year / 100));
    two(year % 100);
    b[p++] = 45; // "-"
    two(month);
    b[p++] = 45;
    two(day);
    b[p++] = 84; // "T"
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    const millis = Math.floor(rest - seconds * 1000);
    two(hours);
    b[p++] = 58; // ":"
    two(minutes);
    b[p++] = 58;
    two(seconds);
    b[p++] = 46; // "."
    b[p++] = 48 + Math.floor(millis / 100);
    two(millis % 100);
    b[p++] = 90; // "Z"
    this.pos = p;
  }

  /** An IPv6 address in RFC 5952 form, from its four words. */
  ipv6(words: ArrayLike<number>): void {
    this.ascii(formatIpv6(words));
  }
}

const decoder = new TextDecoder();

/** The chunks joined as one string (tests, and small lists). */
export function chunksToString(chunks: Iterable<Uint8Array>): string {
  let out = "";
  for (const chunk of chunks) out += decoder.decode(chunk);
  return out;
}
