// Writes the enrichment range table (format described in range-table.ts) from inclusive source ranges:
// resolves overlaps (a later row wins over the part of an earlier row it covers, which is how the ip-location-db
// files nest a more specific range after its parent), merges neighbours and fills gaps.

import { HEADER_BYTES, RANGE_TABLE_MAGIC, RANGE_TABLE_VERSION, SECTION_COUNT, Section } from "./range-table";

export interface CountryRange {
  start: bigint;
  end: bigint;
  /** ISO 3166-1 alpha-2, upper case. */
  code: string;
}

export interface AsnRange {
  start: bigint;
  end: bigint;
  asn: number;
  org: string | null;
}

export interface RangeTableContent {
  source: string;
  countryDataTime?: number;
  asnDataTime?: number;
  /** Rows in source order; absent or empty = the table carries no data of that kind and family. */
  countryV4?: CountryRange[];
  countryV6?: CountryRange[];
  asnV4?: AsnRange[];
  asnV6?: AsnRange[];
}

interface Segment {
  start: bigint;
  end: bigint;
  value: number;
}

const MAX_V4 = 0xffffffffn;
const MAX_V6 = (1n << 128n) - 1n;

/** Disjoint, ascending segments from rows in source order; where rows overlap, the later row wins. */
export function flattenRanges(rows: readonly Segment[]): Segment[] {
  for (const row of rows) {
    if (row.end < row.start) throw new Error(`range end ${row.end} is below its start ${row.start}`);
  }
  let sorted = true;
  for (let i = 1; i < rows.length && sorted; i++) sorted = rows[i].start >= rows[i - 1].start;
  return mergeNeighbours(sorted ? paintSorted(rows) : sweepUnsorted(rows));
}

/** Rows with ascending starts (the published files): each row paints over the tail of what is already out. */
function paintSorted(rows: readonly Segment[]): Segment[] {
  const out: Segment[] = [];
  for (const row of rows) {
    // Every segment already out starts at or before this row's start except the ones popped here.
    const tail: Segment[] = [];
    while (out.length > 0 && out[out.length - 1].start >= row.start) tail.push(out.pop()!);
    tail.reverse();
    const last = out[out.length - 1];
    if (last !== undefined && last.end >= row.start) {
      if (last.end > row.end) tail.unshift({ start: row.end + 1n, end: last.end, value: last.value });
      last.end = row.start - 1n;
    }
    out.push({ start: row.start, end: row.end, value: row.value });
    for (const t of tail) {
      if (t.end > row.end) out.push({ start: t.start > row.end ? t.start : row.end + 1n, end: t.end, value: t.value });
    }
  }
  return out;
}

/** Any order: a sweep over the range ends keeping the covering rows in a max-heap of row numbers (later wins). */
function sweepUnsorted(rows: readonly Segment[]): Segment[] {
  const events: { at: bigint; row: number }[] = [];
  rows.forEach((r, i) => events.push({ at: r.start, row: i }, { at: r.end + 1n, row: ~i }));
  events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const active = new Uint8Array(rows.length);
  const heap: number[] = [];
  const push = (i: number) => {
    heap.push(i);
    for (let c = heap.length - 1; c > 0; ) {
      const p = (c - 1) >> 1;
      if (heap[p] >= heap[c]) break;
      [heap[p], heap[c]] = [heap[c], heap[p]];
      c = p;
    }
  };
  const pop = () => {
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    for (let p = 0; ; ) {
      const l = 2 * p + 1;
      const r = l + 1;
      let m = p;
      if (l < heap.length && heap[l] > heap[m]) m = l;
      if (r < heap.length && heap[r] > heap[m]) m = r;
      if (m === p) break;
      [heap[p], heap[m]] = [heap[m], heap[p]];
      p = m;
    }
  };
  const out: Segment[] = [];
  for (let e = 0; e < events.length; ) {
    const at = events[e].at;
    for (; e < events.length && events[e].at === at; e++) {
      const row = events[e].row;
      if (row >= 0) {
        active[row] = 1;
        push(row);
      } else active[~row] = 0;
    }
    while (heap.length > 0 && active[heap[0]] === 0) pop();
    const open = out[out.length - 1];
    if (open !== undefined && open.end < 0n) open.end = at - 1n; // close the segment before this point
    if (heap.length > 0) out.push({ start: at, end: -1n, value: rows[heap[0]].value });
  }
  return out;
}

function mergeNeighbours(segments: Segment[]): Segment[] {
  const merged: Segment[] = [];
  for (const seg of segments) {
    const prev = merged[merged.length - 1];
    if (prev !== undefined && prev.value === seg.value && prev.end + 1n === seg.start) prev.end = seg.end;
    else merged.push(seg);
  }
  return merged;
}

/** Entry starts and values covering the whole family from 0, with value 0 in the gaps. */
function toEntries(segments: Segment[], max: bigint): { starts: bigint[]; values: number[] } {
  const starts: bigint[] = [];
  const values: number[] = [];
  let next = 0n;
  for (const seg of segments) {
    if (seg.start < 0n || seg.end > max) throw new Error(`range ${seg.start}-${seg.end} is outside the address space`);
    if (seg.start > next) {
      starts.push(next);
      values.push(0);
    }
    starts.push(seg.start);
    values.push(seg.value);
    next = seg.end + 1n;
  }
  if (segments.length > 0 && next <= max) {
    starts.push(next);
    values.push(0);
  }
  return { starts, values };
}

function v4Starts(starts: bigint[]): Uint32Array {
  const out = new Uint32Array(starts.length);
  for (let i = 0; i < starts.length; i++) out[i] = Number(starts[i]);
  return out;
}

function v6Starts(starts: bigint[]): Uint32Array {
  const out = new Uint32Array(starts.length * 4);
  for (let i = 0; i < starts.length; i++) {
    const s = starts[i];
    out[i * 4] = Number((s >> 96n) & 0xffffffffn);
    out[i * 4 + 1] = Number((s >> 64n) & 0xffffffffn);
    out[i * 4 + 2] = Number((s >> 32n) & 0xffffffffn);
    out[i * 4 + 3] = Number(s & 0xffffffffn);
  }
  return out;
}

/** Serializes the content into one range table. */
export function writeRangeTable(content: RangeTableContent): Uint8Array {
  const encoder = new TextEncoder();

  // Country codes: sorted, so the same data always gives the same bytes.
  const codes = [...new Set([...(content.countryV4 ?? []), ...(content.countryV6 ?? [])].map((r) => r.code))].sort();
  for (const code of codes) if (!/^[A-Z]{2}$/.test(code)) throw new Error(`country code ${JSON.stringify(code)} is not two letters`);
  const codeIndex = new Map(codes.map((code, i) => [code, i + 1]));
  const countryEntries = (rows: CountryRange[] | undefined, max: bigint) =>
    toEntries(flattenRanges((rows ?? []).map((r) => ({ start: r.start, end: r.end, value: codeIndex.get(r.code)! }))), max);

  // ASN records (number + organization) and organization names, each stored once.
  const orgIndex = new Map<string, number>();
  const orgs: string[] = [];
  const recordIndex = new Map<string, number>();
  const records: number[] = [];
  const recordOf = (asn: number, org: string | null): number => {
    if (!Number.isInteger(asn) || asn < 0 || asn > 0xffffffff) throw new Error(`AS number ${asn} is out of range`);
    const key = `${asn}\u0000${org ?? ""}`;
    let index = recordIndex.get(key);
    if (index === undefined) {
      let o = 0;
      if (org !== null && org !== "") {
        o = orgIndex.get(org) ?? 0;
        if (o === 0) {
          orgs.push(org);
          o = orgs.length;
          orgIndex.set(org, o);
        }
      }
      records.push(asn, o);
      index = records.length / 2;
      recordIndex.set(key, index);
    }
    return index;
  };
  const asnEntries = (rows: AsnRange[] | undefined, max: bigint) =>
    toEntries(flattenRanges((rows ?? []).map((r) => ({ start: r.start, end: r.end, value: recordOf(r.asn, r.org) }))), max);

  const cV4 = countryEntries(content.countryV4, MAX_V4);
  const cV6 = countryEntries(content.countryV6, MAX_V6);
  const aV4 = asnEntries(content.asnV4, MAX_V4);
  const aV6 = asnEntries(content.asnV6, MAX_V6);

  const orgChunks = orgs.map((o) => encoder.encode(o));
  const orgOffsets = new Uint32Array(orgs.length > 0 ? orgs.length + 1 : 0);
  let orgLength = 0;
  orgChunks.forEach((chunk, i) => {
    orgLength += chunk.length;
    orgOffsets[i + 1] = orgLength;
  });
  const orgBytes = new Uint8Array(orgLength);
  orgChunks.forEach((chunk, i) => orgBytes.set(chunk, orgOffsets[i]));

  const sections: ArrayBufferView[] = [];
  sections[Section.Source] = encoder.encode(content.source);
  sections[Section.CountryCodes] = encoder.encode(codes.join(""));
  sections[Section.CountryV4Starts] = v4Starts(cV4.starts);
  sections[Section.CountryV4Values] = Uint16Array.from(cV4.values);
  sections[Section.CountryV6Starts] = v6Starts(cV6.starts);
  sections[Section.CountryV6Values] = Uint16Array.from(cV6.values);
  sections[Section.AsnV4Starts] = v4Starts(aV4.starts);
  sections[Section.AsnV4Values] = Uint32Array.from(aV4.values);
  sections[Section.AsnV6Starts] = v6Starts(aV6.starts);
  sections[Section.AsnV6Values] = Uint32Array.from(aV6.values);
  sections[Section.AsnRecords] = Uint32Array.from(records);
  sections[Section.OrgOffsets] = orgOffsets;
  sections[Section.OrgBytes] = orgBytes;
  if (codes.length > 0xffff) throw new Error("too many country codes");

  const align = (n: number) => (n + 7) & ~7;
  let offset = align(HEADER_BYTES + SECTION_COUNT * 8);
  const offsets = sections.map((s) => {
    const at = offset;
    offset = align(offset + s.byteLength);
    return at;
  });
  const out = new Uint8Array(offset);
  const view = new DataView(out.buffer);
  for (let i = 0; i < 4; i++) out[i] = RANGE_TABLE_MAGIC.charCodeAt(i);
  view.setUint16(4, RANGE_TABLE_VERSION, true);
  view.setUint16(6, SECTION_COUNT, true);
  view.setFloat64(8, content.countryDataTime ?? 0, true);
  view.setFloat64(16, content.asnDataTime ?? 0, true);
  sections.forEach((s, i) => {
    view.setUint32(HEADER_BYTES + i * 8, offsets[i], true);
    view.setUint32(HEADER_BYTES + i * 8 + 4, s.byteLength, true);
    // Typed arrays are written in the platform's byte order, which is little-endian on every Bun target.
    out.set(new Uint8Array(s.buffer, s.byteOffset, s.byteLength), offsets[i]);
  });
  return out;
}
