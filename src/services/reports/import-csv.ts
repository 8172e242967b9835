// The CSV side of `import reports`: RFC 4180 records read from a whole text or from chunks as they arrive, and
// the bulk-report file's rows (IP,Categories,ReportDate,Comment) checked one by one. See import.ts for the rules.

import { type Category, tryParseCategoryOrAbuseIpdbNumber } from "../../domain/categories";
import { AppError } from "../../domain/errors";
import { type Ip, tryParseIp, unreportableReason } from "../../domain/ip";
import { exceedsChars, MAX_DESCRIPTION_CHARS } from "../../domain/report-input";
import { DEFAULT_SCORING_PARAMETERS, retentionCutoffMs, type ScoringParameters } from "../../domain/scoring";

// ---------------------------------------------------------------------------------------------------------
// CSV (RFC 4180): quoted fields may hold commas, line breaks and doubled quotes; CRLF, LF or CR end a record.

export interface CsvRecord {
  /** 1-based line of the file on which the record starts. */
  line: number;
  fields: string[];
  /** Set when the record's quoting is broken; `fields` is then incomplete. */
  error?: string;
}

interface RecordRead {
  record: CsvRecord;
  /** Where the next record starts. */
  next: number;
  /** The line the next record starts on. */
  nextLine: number;
}

/**
 * The record starting at `i` on `line`. With `final` false the text may go on in a later chunk: a record that
 * reaches the end of `text` before its line end (or whose ending cannot be told yet: a quote or a CR as the last
 * character) is incomplete, and null is returned so the caller can retry once more text has arrived.
 */
function readRecord(text: string, i: number, line: number, final: boolean): RecordRead | null {
  const n = text.length;
  const startLine = line;
  const fields: string[] = [];
  let error: string | undefined;
  let field = "";
  for (;;) {
    if (i < n && text.charCodeAt(i) === 34 /* " */) {
      // A quoted field: runs to the closing quote; "" is one quote; line breaks inside count as lines.
      i++;
      let closed = false;
      for (;;) {
        const q = text.indexOf('"', i);
        if ((q < 0 || q === n - 1) && !final) return null;
        const end = q < 0 ? n : q;
        line += lineBreaks(text, i, end);
        field += text.slice(i, end);
        i = end;
        if (q < 0) break;
        if (text.charCodeAt(q + 1) === 34) {
          field += '"';
          i = q + 2;
          continue;
        }
        i = q + 1;
        closed = true;
        break;
      }
      if (!closed) {
        error ??= "a quoted field is never closed (the rest of the file is part of it)";
      } else if (i < n && !isFieldEnd(text.charCodeAt(i))) {
        error ??= "a quoted field must be followed by a comma or the end of the line";
        // Keep what follows in the same field so the record still ends where its line ends.
        while (i < n && !isFieldEnd(text.charCodeAt(i))) field += text[i++];
      }
    } else {
      const start = i;
      while (i < n && !isFieldEnd(text.charCodeAt(i))) {
        if (text.charCodeAt(i) === 34) error ??= "a quote inside an unquoted field (quote the whole field and double the quote)";
        i++;
      }
      field = text.slice(start, i);
    }
    fields.push(field);
    field = "";
    if (i >= n) {
      if (!final) return null;
      return { record: recordOf(startLine, fields, error), next: i, nextLine: line };
    }
    const c = text.charCodeAt(i);
    if (c === 44 /* , */) {
      i++;
      continue; // the next field (empty when a line end or the end of the text follows)
    }
    // A line end: CRLF, LF or CR (a CR last in a chunk may be the first half of a CRLF).
    if (c === 13 && i + 1 === n && !final) return null;
    i += c === 13 && text.charCodeAt(i + 1) === 10 ? 2 : 1;
    return { record: recordOf(startLine, fields, error), next: i, nextLine: line + 1 };
  }
}

function recordOf(line: number, fields: string[], error: string | undefined): CsvRecord {
  return error === undefined ? { line, fields } : { line, fields, error };
}

const isBlank = (r: CsvRecord): boolean => r.fields.length === 1 && r.error === undefined && r.fields[0].trim() === "";

/** The records of a CSV text, in order. A byte-order mark is ignored; blank lines are skipped. */
export function* csvRecords(text: string): Generator<CsvRecord> {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (i < text.length) {
    const read = readRecord(text, i, line, true)!;
    i = read.next;
    line = read.nextLine;
    if (!isBlank(read.record)) yield read.record;
  }
}

/**
 * CSV records from text that arrives in pieces: each `push` returns the records completed so far and keeps the
 * unfinished last one for the next piece, so memory holds one piece and one record, not the file.
 */
export class CsvRecordStream {
  private rest = "";
  private line = 1;
  private started = false;
  /** An unfinished record is read again only once the text has doubled since: a long one costs linear time. */
  private readAgainAt = 0;

  /** The records completed by `text`; with `final` the text is over and every record left is returned. */
  push(text: string, final = false): CsvRecord[] {
    let buffer = this.rest + text;
    if (!final && buffer.length < this.readAgainAt) {
      this.rest = buffer;
      return [];
    }
    if (!this.started && buffer.length > 0) {
      this.started = true;
      if (buffer.charCodeAt(0) === 0xfeff) buffer = buffer.slice(1);
    }
    const records: CsvRecord[] = [];
    let i = 0;
    while (i < buffer.length) {
      const read = readRecord(buffer, i, this.line, final);
      if (read === null) break;
      i = read.next;
      this.line = read.nextLine;
      if (!isBlank(read.record)) records.push(read.record);
    }
    this.rest = buffer.slice(i);
    this.readAgainAt = 2 * this.rest.length;
    return records;
  }
}

/** Line breaks in text[from, to): LF, CRLF and a lone CR each count once. */
function lineBreaks(text: string, from: number, to: number): number {
  let count = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) count++;
  }
  return count;
}

const isFieldEnd = (c: number): boolean => c === 44 || c === 10 || c === 13;

// ---------------------------------------------------------------------------------------------------------
// Rows of the bulk-report file

export interface ImportRow {
  line: number;
  ip: Ip;
  /** Distinct, in the order the field names them. */
  categories: readonly Category[];
  reportedAtMs: number;
  comment: string;
}

export interface BadRow {
  line: number;
  reason: string;
}

export interface ParsedReportCsv {
  rows: ImportRow[];
  bad: BadRow[];
  /** Whether the first record was a header. */
  header: boolean;
}

export interface ParseOptions {
  /** The import's time: later dates are refused, and dates past retention before it. */
  nowMs: number;
  params?: ScoringParameters;
}

type Column = "ip" | "categories" | "reportdate" | "comment";
const COLUMNS: readonly Column[] = ["ip", "categories", "reportdate", "comment"];

/** Turns records into rows or bad rows, in order; the first record may be the header. */
export class ReportRowReader {
  private readonly params: ScoringParameters;
  private readonly cutoff: number;
  private positions: Record<Column, number> = { ip: 0, categories: 1, reportdate: 2, comment: 3 };
  private width: number | null = null;
  private first = true;
  private readonly categoryFields = new Map<string, readonly Category[] | string>();
  /** Whether the first record was a header. */
  header = false;

  constructor(private readonly options: ParseOptions) {
    this.params = options.params ?? DEFAULT_SCORING_PARAMETERS;
    this.cutoff = retentionCutoffMs(options.nowMs, this.params);
  }

  /** Sorts `records` into `rows` and `bad`; throws AppError only for a header that lacks a required column. */
  read(records: Iterable<CsvRecord>, rows: ImportRow[], bad: BadRow[]): void {
    for (const record of records) {
      if (this.first) {
        this.first = false;
        if (record.error === undefined && record.fields.some((field) => columnName(field) === "ip")) {
          this.header = true;
          this.positions = headerPositions(record.fields);
          this.width = record.fields.length;
          continue;
        }
      }
      const row = this.rowOf(record);
      if ("reason" in row) bad.push(row);
      else rows.push(row);
    }
  }

  private rowOf(record: CsvRecord): ImportRow | BadRow {
    if (record.error !== undefined) return { line: record.line, reason: record.error };
    const f = record.fields;
    const { positions, width, params } = this;
    if (width !== null ? f.length !== width : f.length !== 3 && f.length !== 4) {
      const expected = width !== null ? `${width} fields as in the header` : "3 or 4 fields (IP,Categories,ReportDate,Comment)";
      return { line: record.line, reason: `expected ${expected}, found ${f.length}; quote a field that holds a comma` };
    }
    const problems: string[] = [];

    const rawIp = f[positions.ip];
    let ip: Ip | null = null;
    const parsedIp = tryParseIp(rawIp.trim());
    if (typeof parsedIp === "string") problems.push(`IP "${rawIp}": ${parsedIp}`);
    else {
      const reason = unreportableReason(parsedIp);
      if (reason !== null) problems.push(`IP ${parsedIp.text}: ${reason}`);
      else ip = parsedIp;
    }

    const categories = this.categoriesOf(f[positions.categories]);
    if (typeof categories === "string") problems.push(categories);

    const rawDate = f[positions.reportdate].trim();
    const reportedAtMs = parseIsoDateTime(rawDate);
    if (reportedAtMs === null) {
      problems.push(`ReportDate "${rawDate}" is not an ISO 8601 date and time with a UTC offset (e.g. 2026-11-21T08:00:00Z)`);
    } else if (reportedAtMs > this.options.nowMs) {
      problems.push(`ReportDate ${rawDate} is in the future`);
    } else if (reportedAtMs < this.cutoff) {
      problems.push(`ReportDate ${rawDate} is older than the retention period (${params.retentionDays} days): the report would never count`);
    }

    const comment = positions.comment < f.length ? f[positions.comment] : "";
    if (exceedsChars(comment, MAX_DESCRIPTION_CHARS)) problems.push(`Comment is longer than ${MAX_DESCRIPTION_CHARS} characters`);

    if (problems.length > 0 || ip === null || reportedAtMs === null || typeof categories === "string") return { line: record.line, reason: problems.join("; ") };
    return { line: record.line, ip, categories, reportedAtMs, comment };
  }

  /** A Categories field's categories, or what is wrong with it; remembered, as a file repeats a few fields. */
  private categoriesOf(field: string): readonly Category[] | string {
    let known = this.categoryFields.get(field);
    if (known === undefined) {
      known = parseCategoriesField(field);
      if (this.categoryFields.size >= MAX_CATEGORY_FIELDS_KEPT) this.categoryFields.clear();
      this.categoryFields.set(field, known);
    }
    return known;
  }
}

const MAX_CATEGORY_FIELDS_KEPT = 10_000;

function parseCategoriesField(field: string): readonly Category[] | string {
  const categories: Category[] = [];
  const unknown: string[] = [];
  for (const item of field.split(",")) {
    if (item.trim() === "") continue;
    const category = tryParseCategoryOrAbuseIpdbNumber(item);
    if (category === null) unknown.push(`"${item.trim()}"`);
    else if (!categories.includes(category)) categories.push(category);
  }
  if (unknown.length > 0) return `unknown ${unknown.length === 1 ? "category" : "categories"} ${unknown.join(", ")} (AbuseIPDB numbers 1-23 or category names)`;
  if (categories.length === 0) return "no category";
  return categories;
}

/** Reads a whole file's text; throws AppError only for a header that lacks a required column. */
export function parseReportCsv(text: string, options: ParseOptions): ParsedReportCsv {
  const reader = new ReportRowReader(options);
  const rows: ImportRow[] = [];
  const bad: BadRow[] = [];
  reader.read(csvRecords(text), rows, bad);
  return { rows, bad, header: reader.header };
}

function headerPositions(fields: string[]): Record<Column, number> {
  const names = fields.map(columnName);
  const at = (column: Column) => names.indexOf(column);
  const missing = COLUMNS.filter((c) => c !== "comment" && at(c) < 0);
  if (missing.length > 0) {
    throw new AppError("bad_request", `The header line lacks the column${missing.length > 1 ? "s" : ""} ${missing.map((c) => COLUMN_TITLES[c]).join(", ")} (expected IP,Categories,ReportDate,Comment)`);
  }
  // A file without a Comment column points it past the end of every row.
  return { ip: at("ip"), categories: at("categories"), reportdate: at("reportdate"), comment: at("comment") < 0 ? Number.MAX_SAFE_INTEGER : at("comment") };
}

/** A header field as a column name: case, spaces, `_` and `-` ignored (`Report Date` = `reportdate`). */
function columnName(field: string): string {
  return field.trim().toLowerCase().replace(/[\s_-]/g, "");
}

const COLUMN_TITLES: Record<Column, string> = { ip: "IP", categories: "Categories", reportdate: "ReportDate", comment: "Comment" };

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** As Date.UTC counts them (it reads years 0..99 as 1900..1999). */
function daysInMonth(year: number, month: number): number {
  if (month !== 2) return DAYS_IN_MONTH[month - 1];
  const y = year < 100 ? year + 1900 : year;
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** Milliseconds of an ISO 8601 date-time with a UTC offset, or null (no offset, or a field out of range). */
export function parseIsoDateTime(text: string): number | null {
  const m = ISO_DATE_TIME.exec(text);
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  if (day > daysInMonth(year, month)) return null;
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  // Date.UTC maps years 0..99 to 1900..1999; such dates are refused anyway as past retention, but keep them exact.
  const exact = year < 100 ? new Date(utc).setUTCFullYear(year) : utc;
  return exact - offsetMinutes * 60_000;
}
