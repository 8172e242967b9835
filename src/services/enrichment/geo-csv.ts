// Parses the ip-location-db range CSV layouts (`start,end,country_code` and `start,end,asn,organization`), with
// addresses or decimal numbers, IPv4 or IPv6, into inclusive ranges; bad lines are collected, not thrown.
// Used by `geo import` and by the build step that packs the default data.

import { tryParseIp } from "../../domain/ip";
import type { AsnRange, CountryRange } from "../../index/range-table-writer";

export type GeoCsvLayout = "country" | "asn";

export interface GeoCsvBadLine {
  /** 1-based line number in the file. */
  line: number;
  reason: string;
  text: string;
}

export interface ParsedGeoCsv {
  layout: GeoCsvLayout;
  countryV4: CountryRange[];
  countryV6: CountryRange[];
  asnV4: AsnRange[];
  asnV6: AsnRange[];
  /** Good data rows. */
  rowCount: number;
  /** The first bad lines (up to maxBadLines) and how many there were in all. */
  badLines: GeoCsvBadLine[];
  badLineCount: number;
}

export interface GeoCsvOptions {
  /** How numbers are read: "auto" (default) takes a file with any number above 2^32-1 as IPv6, else IPv4. */
  numbers?: "auto" | 4 | 6;
  maxBadLines?: number;
}

export class GeoCsvError extends Error {}

const MAX_V4 = 0xffffffffn;
const MAX_V6 = (1n << 128n) - 1n;

/** A position parsed from a field: an address of a known family, or a bare number whose family the file decides. */
interface Position {
  value: bigint;
  family: 4 | 6 | "number";
}

/** Splits one CSV line into fields (RFC 4180 quoting, `""` inside quotes), or null when the quoting is broken. */
export function splitCsvLine(line: string): string[] | null {
  if (!line.includes('"')) return line.split(",").map((f) => f.trim());
  const fields: string[] = [];
  let i = 0;
  while (i <= line.length) {
    while (line[i] === " ") i++;
    if (line[i] === '"') {
      let value = "";
      i++;
      for (;;) {
        const q = line.indexOf('"', i);
        if (q < 0) return null;
        value += line.slice(i, q);
        if (line[q + 1] === '"') {
          value += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      while (line[i] === " ") i++;
      if (i < line.length && line[i] !== ",") return null;
      fields.push(value);
      i++;
    } else {
      const comma = line.indexOf(",", i);
      const end = comma < 0 ? line.length : comma;
      fields.push(line.slice(i, end).trim());
      i = end + 1;
    }
  }
  return fields;
}

/** Dotted-quad IPv4 to a number, or null (leading zeros are tolerated here: these are data files, not input). */
export function ipv4TextToBigInt(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (part.length === 0 || part.length > 3 || !/^\d+$/.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return BigInt(value);
}

/**
 * IPv6 text to a 128-bit number, or null, through the product's address parser. An IPv4-mapped address stays
 * in the IPv6 space here (`::ffff:a.b.c.d`), since these are IPv6 range files.
 */
export function ipv6TextToBigInt(text: string): bigint | null {
  const ip = tryParseIp(text);
  if (typeof ip === "string") return null;
  if (ip.version === 4) return (0xffffn << 32n) | BigInt(ip.value);
  let value = 0n;
  for (const word of ip.words) value = (value << 32n) | BigInt(word);
  return value;
}

function parsePosition(field: string): Position | string {
  if (field.length === 0) return "empty address";
  const c = field.charCodeAt(0);
  if (field.includes(":")) {
    const value = ipv6TextToBigInt(field);
    return value === null ? `"${field}" is not an IPv6 address` : { value, family: 6 };
  }
  if (field.includes(".")) {
    const value = ipv4TextToBigInt(field);
    return value === null ? `"${field}" is not an IPv4 address` : { value, family: 4 };
  }
  if (c >= 48 && c <= 57 && /^\d{1,39}$/.test(field)) {
    const value = BigInt(field);
    return value > MAX_V6 ? `${field} is above the IPv6 address space` : { value, family: "number" };
  }
  return `"${field}" is neither an address nor a number`;
}

interface PendingRow {
  line: number;
  text: string;
  start: Position;
  end: Position;
  code: string;
  asn: number;
  org: string | null;
}

/** Parses a whole file; throws GeoCsvError when the layout is not one of the two supported. */
export function parseGeoCsv(text: string, options: GeoCsvOptions = {}): ParsedGeoCsv {
  const maxBad = options.maxBadLines ?? 100;
  const badLines: GeoCsvBadLine[] = [];
  let badLineCount = 0;
  const bad = (line: number, reason: string, lineText: string) => {
    badLineCount++;
    if (badLines.length < maxBad) badLines.push({ line, reason, text: lineText.length > 200 ? `${lineText.slice(0, 200)}…` : lineText });
  };

  let layout: GeoCsvLayout | null = null;
  const rows: PendingRow[] = [];
  let anyLargeNumber = false;
  let lineNo = 0;
  let from = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  while (from <= text.length) {
    let nl = text.indexOf("\n", from);
    if (nl < 0) nl = text.length;
    let line = text.slice(from, nl);
    from = nl + 1;
    lineNo++;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (line.trim() === "" || line.startsWith("#")) continue;

    const fields = splitCsvLine(line);
    if (fields === null) {
      bad(lineNo, "unbalanced quotes", line);
      continue;
    }
    const start = parsePosition(fields[0]);
    if (typeof start === "string" && layout === null && rows.length === 0 && badLineCount === 0 && /[a-z]/i.test(fields[0]) && !fields[0].includes(":")) {
      continue; // a header line such as ip_range_start,ip_range_end,country_code
    }
    if (layout === null) {
      if (fields.length === 3) layout = "country";
      else if (fields.length === 4) layout = "asn";
      else if (typeof start !== "string") {
        throw new GeoCsvError(
          `line ${lineNo} has ${fields.length} fields: expected start,end,country_code or start,end,asn,organization`,
        );
      }
    }
    const expected = layout === "asn" ? 4 : 3;
    if (layout !== null && fields.length !== expected) {
      bad(lineNo, `${fields.length} fields where the file's layout has ${expected}`, line);
      continue;
    }
    if (typeof start === "string") {
      bad(lineNo, `start: ${start}`, line);
      continue;
    }
    const end = parsePosition(fields[1]);
    if (typeof end === "string") {
      bad(lineNo, `end: ${end}`, line);
      continue;
    }
    if (start.family !== end.family) {
      bad(lineNo, "start and end are of different kinds", line);
      continue;
    }
    if (end.value < start.value) {
      bad(lineNo, "end is below start", line);
      continue;
    }
    let code = "";
    let asn = 0;
    let org: string | null = null;
    if (layout === "country") {
      code = fields[2].toUpperCase();
      if (!/^[A-Z]{2}$/.test(code)) {
        bad(lineNo, `"${fields[2]}" is not a two-letter country code`, line);
        continue;
      }
    } else {
      const m = /^(?:AS)?(\d{1,10})$/i.exec(fields[2]);
      const n = m ? Number(m[1]) : NaN;
      if (!(n <= 0xffffffff)) {
        bad(lineNo, `"${fields[2]}" is not an AS number`, line);
        continue;
      }
      asn = n;
      org = fields[3] === "" ? null : fields[3];
    }
    if (start.family === "number" && end.value > MAX_V4) anyLargeNumber = true;
    rows.push({ line: lineNo, text: line, start, end, code, asn, org });
  }
  if (layout === null) throw new GeoCsvError("the file holds no ranges");

  // Bare numbers: the file decides their family, since a v6 file's numbers are all above 2^32 in practice.
  const numberFamily: 4 | 6 = options.numbers === 4 || options.numbers === 6 ? options.numbers : anyLargeNumber ? 6 : 4;
  const result: ParsedGeoCsv = { layout, countryV4: [], countryV6: [], asnV4: [], asnV6: [], rowCount: 0, badLines, badLineCount };
  for (const row of rows) {
    const family = row.start.family === "number" ? numberFamily : row.start.family;
    if (family === 4 && row.end.value > MAX_V4) {
      bad(row.line, "number is above the IPv4 address space", row.text);
      continue;
    }
    result.rowCount++;
    if (layout === "country") {
      (family === 4 ? result.countryV4 : result.countryV6).push({ start: row.start.value, end: row.end.value, code: row.code });
    } else {
      (family === 4 ? result.asnV4 : result.asnV6).push({ start: row.start.value, end: row.end.value, asn: row.asn, org: row.org });
    }
  }
  result.badLineCount = badLineCount;
  badLines.sort((a, b) => a.line - b.line);
  return result;
}
