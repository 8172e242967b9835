// Reads the appliance's blocklist in the `nft` or `ipset` format (contract 5.10, src/domain/blocklist/formats.ts)
// as it arrives, line by line, giving each entry with its family, and tells a complete list from anything else:
// the header's count must equal the entries read, and the script must have ended where that format ends (the
// element statement closed; both families swapped), so a cut body, an empty one or an HTML page is refused.
// Entry lines are read as bytes (no string per IPv4 entry): a million of them take a fraction of a second.

import { ipv4Mask } from "../ip";

export type PulledFormat = "nft" | "ipset";

export interface EntrySink {
  /** An IPv4 address (prefix length 32) or network, as an unsigned 32-bit number. */
  ipv4(value: number, prefixLength: number): void;
  /** An IPv6 address or network, as the appliance wrote it. */
  ipv6(text: string): void;
}

const HEADER = /^# abuse-intel blocklist generated at \S+: (\d+) entr(?:y|ies) \(/;
// What an IPv6 entry may hold: an address or a network. Anything else (a brace, a semicolon) would change the
// meaning of the script written from it. (IPv4 entries are parsed to numbers, so nothing else gets through.)
const ENTRY_6 = /^[0-9a-f:.]{2,45}(?:\/(?:[0-9]|[1-9][0-9]|1[01][0-9]|12[0-8]))?$/;
// The names the appliance's scripts use (formats.ts NFT_TABLE, SET_NAMES).
const NFT_ELEMENTS = /^add element inet abuse_intel abuse_intel_v([46]) \{$/;
const NFT_FLUSH = /^flush set inet abuse_intel abuse_intel_v([46])$/;
const IPSET_ADD = ascii("add abuse_intel_v4_next "); // byte 17 is the family digit
const IPSET_DONE = /^destroy abuse_intel_v([46])_next$/;
const MAX_LINE = 4096;
const TAB = 9;
const COMMA = 44;
const NEWLINE = 10;

function ascii(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

const latin1 = new TextDecoder("latin1");

export class BlocklistBodyReader {
  /** The start of a line that the previous piece cut, until its end arrives. */
  private carry: Uint8Array | null = null;
  private lineNumber = 0;
  private declared = -1;
  private entries = 0;
  /** nft: the family of the open `add element` statement, 0 when none is open. */
  private open: 4 | 6 | 0 = 0;
  /** nft: families flushed; ipset: families swapped in and their staging set destroyed. */
  private readonly finished = new Set<4 | 6>();
  private failure: string | null = null;

  constructor(
    readonly format: PulledFormat,
    private readonly sink: EntrySink,
  ) {}

  /** Reads the next piece of the body; throws with the reason at the first line that is not the format's. */
  push(chunk: Uint8Array): void {
    if (this.failure !== null) this.fail(this.failure);
    let start = 0;
    if (this.carry !== null) {
      const nl = chunk.indexOf(NEWLINE);
      const joined = new Uint8Array(this.carry.length + (nl < 0 ? chunk.length : nl));
      joined.set(this.carry);
      joined.set(nl < 0 ? chunk : chunk.subarray(0, nl), this.carry.length);
      if (nl < 0) return this.keep(joined);
      this.carry = null;
      this.line(joined, 0, joined.length);
      start = nl + 1;
    }
    for (let nl = chunk.indexOf(NEWLINE, start); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      this.line(chunk, start, nl);
      start = nl + 1;
    }
    if (start < chunk.length) this.keep(chunk.slice(start));
  }

  /** The body has ended: its count of entries, or a throw saying why it is not a complete list. */
  end(): number {
    if (this.failure !== null) this.fail(this.failure);
    if (this.carry !== null) this.fail(`the body ends inside a line (line ${this.lineNumber + 1}): cut short`);
    if (this.declared < 0) this.fail(this.lineNumber === 0 ? "the body is empty" : `it is not an ${this.format} blocklist of abuse-intel (no header line)`);
    if (this.open !== 0) this.fail("the body ends inside an element statement: cut short");
    for (const v of [4, 6] as const) {
      if (!this.finished.has(v)) this.fail(`the body ends before the IPv${v} set is ${this.format === "nft" ? "flushed" : "swapped in"}: cut short`);
    }
    if (this.entries !== this.declared) this.fail(`the header announces ${this.declared} entries, the body holds ${this.entries}: cut short`);
    return this.entries;
  }

  private keep(partial: Uint8Array): void {
    // A line longer than any the formats write: not this format (or a binary body).
    if (partial.length > MAX_LINE) this.fail(`line ${this.lineNumber + 1} is longer than ${MAX_LINE} characters`);
    this.carry = partial;
  }

  private fail(reason: string): never {
    this.failure ??= reason;
    throw new Error(this.failure);
  }

  private line(b: Uint8Array, s: number, e: number): void {
    this.lineNumber++;
    if (this.declared >= 0) {
      // The entry lines, by their bytes.
      if (this.format === "ipset") {
        const family = ipsetEntryFamily(b, s, e);
        if (family !== 0) return this.entry(family, b, s + IPSET_ADD.length, e);
      } else if (this.open !== 0 && b[s] === TAB && e - s > 2 && b[e - 1] === COMMA) {
        return this.entry(this.open, b, s + 1, e - 1);
      }
    }
    const text = latin1.decode(b.subarray(s, e));
    if (this.declared < 0) return this.headerLine(text);
    if (this.format === "nft") this.nftLine(text);
    else this.ipsetLine(text);
  }

  private headerLine(line: string): void {
    const header = HEADER.exec(line);
    if (header !== null) this.declared = Number(header[1]);
    else if (!(this.format === "nft" && this.lineNumber === 1 && line === "#!/usr/sbin/nft -f")) {
      this.fail(`it is not an ${this.format} blocklist of abuse-intel (line ${this.lineNumber}: ${JSON.stringify(line.slice(0, 80))})`);
    }
  }

  private nftLine(line: string): void {
    if (this.open !== 0) {
      if (line === "}") this.open = 0;
      else this.unexpected(line);
      return;
    }
    const elements = NFT_ELEMENTS.exec(line);
    if (elements !== null) {
      this.open = elements[1] === "4" ? 4 : 6;
      return;
    }
    const flushed = NFT_FLUSH.exec(line);
    if (flushed !== null) this.finished.add(flushed[1] === "4" ? 4 : 6);
    else if (!(line.startsWith("#") || line === "" || line.startsWith("add table inet abuse_intel") || line.startsWith("add set inet abuse_intel "))) this.unexpected(line);
  }

  private ipsetLine(line: string): void {
    const done = IPSET_DONE.exec(line);
    if (done !== null) this.finished.add(done[1] === "4" ? 4 : 6);
    else if (!(line.startsWith("#") || line === "" || /^(create|flush|swap) abuse_intel_v[46]/.test(line))) this.unexpected(line);
  }

  private entry(family: 4 | 6, b: Uint8Array, s: number, e: number): void {
    if (family === 4) {
      const prefixLength = parseIpv4Entry(b, s, e);
      if (prefixLength < 0) this.badEntry(4, b, s, e);
      this.entries++;
      this.sink.ipv4(parsedValue, prefixLength);
      return;
    }
    const text = latin1.decode(b.subarray(s, e));
    if (!ENTRY_6.test(text)) this.badEntry(6, b, s, e);
    this.entries++;
    this.sink.ipv6(text);
  }

  private badEntry(family: 4 | 6, b: Uint8Array, s: number, e: number): never {
    this.fail(`line ${this.lineNumber} holds no IPv${family} address or network: ${JSON.stringify(latin1.decode(b.subarray(s, Math.min(e, s + 80))))}`);
  }

  private unexpected(line: string): never {
    this.fail(`line ${this.lineNumber} is not part of an ${this.format} blocklist: ${JSON.stringify(line.slice(0, 80))}`);
  }
}

/** 4 or 6 when the line is `add abuse_intel_vN_next ...`, else 0. */
function ipsetEntryFamily(b: Uint8Array, s: number, e: number): 4 | 6 | 0 {
  if (e - s <= IPSET_ADD.length) return 0;
  for (let i = 0; i < IPSET_ADD.length; i++) {
    if (i === 17) continue;
    if (b[s + i] !== IPSET_ADD[i]) return 0;
  }
  const digit = b[s + 17];
  return digit === 52 ? 4 : digit === 54 ? 6 : 0;
}

/** The value of the last IPv4 entry parsed (kept outside the return value so no object is made per entry). */
let parsedValue = 0;

/**
 * Parses `a.b.c.d` or `a.b.c.d/n` (no leading zeros, no host bits set) from bytes: the prefix length, with the
 * address in `parsedValue`; -1 when it is not one.
 */
function parseIpv4Entry(b: Uint8Array, s: number, e: number): number {
  let value = 0;
  let p = s;
  for (let octet = 0; octet < 4; octet++) {
    const first = p;
    let n = 0;
    while (p < e && b[p] >= 48 && b[p] <= 57 && p - first < 3) n = n * 10 + (b[p++] - 48);
    if (p === first || n > 255 || (p - first > 1 && b[first] === 48)) return -1;
    value = value * 256 + n;
    if (octet < 3) {
      if (b[p] !== 46) return -1;
      p++;
    }
  }
  let prefixLength = 32;
  if (p < e) {
    if (b[p] !== 47 || e - p < 2 || e - p > 3) return -1;
    prefixLength = 0;
    for (let q = p + 1; q < e; q++) {
      if (b[q] < 48 || b[q] > 57) return -1;
      prefixLength = prefixLength * 10 + (b[q] - 48);
    }
    if (prefixLength > 32 || (e - p === 3 && b[p + 1] === 48)) return -1;
    if ((value & ipv4Mask(prefixLength)) >>> 0 !== value) return -1;
  }
  parsedValue = value;
  return prefixLength;
}
