// Reader of the enrichment range table: country and ASN/organization ranges for IPv4 and IPv6 in one byte
// buffer, used in place through typed-array views (no parsing at load), answered by binary search.
//
// Format (version 1), little-endian, every section starting at an 8-byte aligned offset:
//
//   0   u8[4]  magic "AIRT"
//   4   u16    format version (1)
//   6   u16    section count (13)
//   8   f64    country data time (ms since the epoch; 0 = unknown)
//   16  f64    ASN data time
//   24  13 × { u32 byteOffset, u32 byteLength }, one per section below, then the sections
//
//   0  SOURCE            UTF-8 text naming where the data came from
//   1  COUNTRY_CODES     2 ASCII bytes per code; code index k (1-based) is bytes [2k-2, 2k)
//   2  COUNTRY_V4_STARTS Uint32[n]   range starts, strictly ascending, first = 0
//   3  COUNTRY_V4_VALUES Uint16[n]   0 = no data, else a code index
//   4  COUNTRY_V6_STARTS Uint32[4n]  128-bit starts as four words, most significant first
//   5  COUNTRY_V6_VALUES Uint16[n]
//   6  ASN_V4_STARTS     Uint32[n]
//   7  ASN_V4_VALUES     Uint32[n]   0 = no data, else a record index (1-based)
//   8  ASN_V6_STARTS     Uint32[4n]
//   9  ASN_V6_VALUES     Uint32[n]
//   10 ASN_RECORDS       Uint32[2r]  per record: AS number, organization index (1-based, 0 = none)
//   11 ORG_OFFSETS       Uint32[o+1] byte offsets of organization k (1-based) in ORG_BYTES: [off[k-1], off[k])
//   12 ORG_BYTES         UTF-8
//
// Entry i covers [start[i], start[i+1]) and the last one runs to the top of the address space, so a lookup
// is "the last start <= address". Gaps between source ranges are entries with value 0. A family with n = 0
// means the table carries no data of that kind and family (an import may hold only one of the four).
// IPv6 keeps full 128-bit starts: about 4 % of the source ranges do not start on a /64 boundary, and full
// keys keep one code path for the packed data and for imports, at ~3.5 MB more than 64-bit keys would cost.

import type { Ip } from "../domain/ip";

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  // Sections are typed-array views in the platform's byte order; every Bun target is little-endian.
  throw new Error("the enrichment range table needs a little-endian platform");
}

export const RANGE_TABLE_MAGIC = "AIRT";
export const RANGE_TABLE_VERSION = 1;
export const HEADER_BYTES = 24;

export const Section = {
  Source: 0,
  CountryCodes: 1,
  CountryV4Starts: 2,
  CountryV4Values: 3,
  CountryV6Starts: 4,
  CountryV6Values: 5,
  AsnV4Starts: 6,
  AsnV4Values: 7,
  AsnV6Starts: 8,
  AsnV6Values: 9,
  AsnRecords: 10,
  OrgOffsets: 11,
  OrgBytes: 12,
} as const;
export type Section = (typeof Section)[keyof typeof Section];
export const SECTION_COUNT = 13;

export type EnrichmentKind = "country" | "asn";

/** What one range table knows of one address. */
export interface RangeLookup {
  countryCode: string | null;
  asn: number | null;
  org: string | null;
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** The last index i in [lo, hi] with starts[i] <= x, given starts[lo] <= x (the entry-0-is-zero rule); -1 if empty. */
export function searchV4(starts: Uint32Array, x: number, lo = 0, hi = starts.length - 1): number {
  if (hi < lo) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * For each /16 h, how many starts lie below h << 16: the answer for an address in h is then within
 * [buckets[h] - 1, buckets[h + 1] - 1], a few entries instead of half a million. Built at open (~1 ms), 256 KiB.
 */
export function v4Buckets(starts: Uint32Array): Uint32Array {
  const buckets = new Uint32Array(65537);
  let i = 0;
  for (let h = 0; h <= 65536; h++) {
    const bound = h * 65536;
    while (i < starts.length && starts[i] < bound) i++;
    buckets[h] = i;
  }
  return buckets;
}

export function searchV4Bucketed(starts: Uint32Array, buckets: Uint32Array, x: number): number {
  const h = x >>> 16;
  const lo = buckets[h];
  return searchV4(starts, x, lo > 0 ? lo - 1 : 0, buckets[h + 1] - 1);
}

/** The same over 128-bit starts stored as four words per entry. */
export function searchV6(starts: Uint32Array, w: ArrayLike<number>): number {
  const w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
  let lo = 0;
  let hi = (starts.length >>> 2) - 1;
  if (hi < 0) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    const j = mid << 2;
    let le: boolean;
    const a0 = starts[j];
    if (a0 !== w0) le = a0 < w0;
    else {
      const a1 = starts[j + 1];
      if (a1 !== w1) le = a1 < w1;
      else {
        const a2 = starts[j + 2];
        le = a2 !== w2 ? a2 < w2 : starts[j + 3] <= w3;
      }
    }
    if (le) lo = mid;
    else hi = mid - 1;
  }
  // Entry 0 starts at :: in tables we write; tables from elsewhere are validated the same way.
  return lo;
}

export class RangeTable {
  readonly bytes: Uint8Array;
  readonly countryDataTime: number;
  readonly asnDataTime: number;
  readonly source: string;
  private readonly codes: (string | null)[];
  private readonly countryV4Starts: Uint32Array;
  private readonly countryV4Values: Uint16Array;
  private readonly countryV4Buckets: Uint32Array;
  private readonly countryV6Starts: Uint32Array;
  private readonly countryV6Values: Uint16Array;
  private readonly asnV4Starts: Uint32Array;
  private readonly asnV4Values: Uint32Array;
  private readonly asnV4Buckets: Uint32Array;
  private readonly asnV6Starts: Uint32Array;
  private readonly asnV6Values: Uint32Array;
  private readonly records: Uint32Array;
  private readonly orgOffsets: Uint32Array;
  private readonly orgBytes: Uint8Array;
  /** Organization names decoded on first use: each is decoded once, then shared by every lookup. */
  private readonly orgCache: (string | undefined)[] = [];

  private constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const magic = String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]);
    if (bytes.byteLength < HEADER_BYTES + SECTION_COUNT * 8 || magic !== RANGE_TABLE_MAGIC) {
      throw new Error("not an abuse-intel range table");
    }
    const version = view.getUint16(4, true);
    if (version !== RANGE_TABLE_VERSION) throw new Error(`range table format version ${version} is not supported`);
    const sectionCount = view.getUint16(6, true);
    if (sectionCount < SECTION_COUNT) throw new Error("range table header is truncated");
    this.countryDataTime = view.getFloat64(8, true);
    this.asnDataTime = view.getFloat64(16, true);

    const section = (index: Section, elementBytes: number): [number, number] => {
      const offset = view.getUint32(HEADER_BYTES + index * 8, true);
      const length = view.getUint32(HEADER_BYTES + index * 8 + 4, true);
      if (offset + length > bytes.byteLength || length % elementBytes !== 0 || (offset + bytes.byteOffset) % elementBytes !== 0) {
        throw new Error(`range table section ${index} is out of bounds`);
      }
      return [bytes.byteOffset + offset, length / elementBytes];
    };
    const u32 = (index: Section) => new Uint32Array(bytes.buffer, ...section(index, 4));
    const u16 = (index: Section) => new Uint16Array(bytes.buffer, ...section(index, 2));
    const u8 = (index: Section) => new Uint8Array(bytes.buffer, ...section(index, 1));

    this.source = utf8.decode(u8(Section.Source));
    const codeBytes = u8(Section.CountryCodes);
    this.codes = [null];
    for (let i = 0; i + 1 < codeBytes.length; i += 2) this.codes.push(String.fromCharCode(codeBytes[i], codeBytes[i + 1]));
    this.countryV4Starts = u32(Section.CountryV4Starts);
    this.countryV4Values = u16(Section.CountryV4Values);
    this.countryV6Starts = u32(Section.CountryV6Starts);
    this.countryV6Values = u16(Section.CountryV6Values);
    this.asnV4Starts = u32(Section.AsnV4Starts);
    this.asnV4Values = u32(Section.AsnV4Values);
    this.asnV6Starts = u32(Section.AsnV6Starts);
    this.asnV6Values = u32(Section.AsnV6Values);
    this.records = u32(Section.AsnRecords);
    this.orgOffsets = u32(Section.OrgOffsets);
    this.orgBytes = u8(Section.OrgBytes);

    // Check the invariants lookups rely on once, so a damaged or foreign file fails here and not later.
    const same = (starts: Uint32Array, values: ArrayLike<number>, width: number) =>
      starts.length === values.length * width && (values.length === 0 || starts.slice(0, width).every((w) => w === 0));
    if (
      !same(this.countryV4Starts, this.countryV4Values, 1) ||
      !same(this.countryV6Starts, this.countryV6Values, 4) ||
      !same(this.asnV4Starts, this.asnV4Values, 1) ||
      !same(this.asnV6Starts, this.asnV6Values, 4) ||
      this.records.length % 2 !== 0 ||
      (this.orgOffsets.length > 0 && this.orgOffsets[this.orgOffsets.length - 1] > this.orgBytes.length)
    ) {
      throw new Error("range table sections are inconsistent");
    }
    const codeCount = this.codes.length - 1;
    const recordCount = this.records.length / 2;
    const orgCount = Math.max(0, this.orgOffsets.length - 1);
    if (maxOf(this.countryV4Values) > codeCount || maxOf(this.countryV6Values) > codeCount) {
      throw new Error("range table country values are out of range");
    }
    if (maxOf(this.asnV4Values) > recordCount || maxOf(this.asnV6Values) > recordCount) {
      throw new Error("range table ASN values are out of range");
    }
    for (let r = 1; r < this.records.length; r += 2) {
      if (this.records[r] > orgCount) throw new Error("range table organization index is out of range");
    }
    this.countryV4Buckets = v4Buckets(this.countryV4Starts);
    this.asnV4Buckets = v4Buckets(this.asnV4Starts);
  }

  /** Opens a table over the given bytes (copied only when they are not 8-byte aligned). */
  static fromBytes(input: Uint8Array | ArrayBuffer): RangeTable {
    let bytes = input instanceof Uint8Array ? input : new Uint8Array(input);
    if (bytes.byteOffset % 8 !== 0) bytes = bytes.slice();
    return new RangeTable(bytes);
  }

  /** Whether this table carries data of a kind for a family (imports may carry only some). */
  has(kind: EnrichmentKind, version: 4 | 6): boolean {
    if (kind === "country") return (version === 4 ? this.countryV4Values : this.countryV6Values).length > 0;
    return (version === 4 ? this.asnV4Values : this.asnV6Values).length > 0;
  }

  /** Number of entries (ranges and gaps) of a kind and family. */
  entryCount(kind: EnrichmentKind, version: 4 | 6): number {
    if (kind === "country") return (version === 4 ? this.countryV4Values : this.countryV6Values).length;
    return (version === 4 ? this.asnV4Values : this.asnV6Values).length;
  }

  dataTime(kind: EnrichmentKind): number {
    return kind === "country" ? this.countryDataTime : this.asnDataTime;
  }

  /** The IPv4 entries of a kind: entry i covers [starts[i], starts[i + 1]) and has values[i] (0 = unknown). */
  v4Entries(kind: EnrichmentKind): { starts: Uint32Array; values: Uint16Array | Uint32Array } {
    return kind === "country" ? { starts: this.countryV4Starts, values: this.countryV4Values } : { starts: this.asnV4Starts, values: this.asnV4Values };
  }

  /** The organization of an ASN record (0 = none): records of one organization have the same owner name. */
  orgIndexOf(record: number): number {
    return record > 0 ? this.records[(record - 1) * 2 + 1] : 0;
  }

  /** Country code index of an address (0 = unknown); turn it into a code with countryCodeAt. */
  countryIndex(ip: Ip): number {
    if (ip.version === 4) {
      const i = searchV4Bucketed(this.countryV4Starts, this.countryV4Buckets, ip.value);
      return i < 0 ? 0 : this.countryV4Values[i];
    }
    const i = searchV6(this.countryV6Starts, ip.words);
    return i < 0 ? 0 : this.countryV6Values[i];
  }

  countryCodeAt(index: number): string | null {
    return this.codes[index] ?? null;
  }

  /** ASN record index of an address (0 = unknown); read it with asnAt and orgAt. */
  asnRecord(ip: Ip): number {
    if (ip.version === 4) {
      const i = searchV4Bucketed(this.asnV4Starts, this.asnV4Buckets, ip.value);
      return i < 0 ? 0 : this.asnV4Values[i];
    }
    const i = searchV6(this.asnV6Starts, ip.words);
    return i < 0 ? 0 : this.asnV6Values[i];
  }

  asnAt(record: number): number | null {
    return record > 0 ? this.records[(record - 1) * 2] : null;
  }

  orgAt(record: number): string | null {
    if (record <= 0) return null;
    const org = this.records[(record - 1) * 2 + 1];
    if (org === 0) return null;
    let name = this.orgCache[org];
    if (name === undefined) {
      name = utf8.decode(this.orgBytes.subarray(this.orgOffsets[org - 1], this.orgOffsets[org]));
      this.orgCache[org] = name;
    }
    return name;
  }

  lookup(ip: Ip): RangeLookup {
    const record = this.asnRecord(ip);
    return { countryCode: this.countryCodeAt(this.countryIndex(ip)), asn: this.asnAt(record), org: this.orgAt(record) };
  }
}

function maxOf(values: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i] > max) max = values[i];
  return max;
}
