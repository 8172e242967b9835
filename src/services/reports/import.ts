// `abuse-intel import reports`: reads the AbuseIPDB bulk-report CSV (`IP,Categories,ReportDate,Comment`) and
// stores its good rows as reports of one reporter, in one transaction, each address rescored once.
//
// Decisions where the contract is open:
// - Each category of a row becomes one report (same address, reporter, time and comment): our reports carry one
//   category each, and this keeps every category visible in lookups, blocklist filters and verification. The
//   per-reporter cap keeps a many-category row from weighing more than one reporter may. Categories are AbuseIPDB
//   numbers or our names, several in one (quoted) field; duplicates after mapping (10, 11, 12 are all SPAM) drop.
// - The header line is optional. A first line with a field `IP` (any case) is the header: columns are then found
//   by name in any order, `Comment` optional. Without one the order is IP,Categories,ReportDate[,Comment].
// - ReportDate is ISO 8601 with a time and a UTC offset (`2026-11-21T08:00:00Z`, `…-04:00`); the report keeps
//   that date, so old history decays like live reports. A date in the future is a bad row, and so is one older
//   than the retention period: such a report would never count.
// - Severity is not in the file: every imported report gets the `--severity` given (default 3, medium).
// - There is no 15-minute duplicate rule (history legitimately repeats), no credits (credits reward live
//   reports; an import is an operator's bulk load) and no `ip.reported` events (history, not new sightings:
//   replaying it would flood every webhook receiver).
// - Comments longer than 1,024 characters (the API's limit) make the row bad rather than being cut silently.

import { importStatements } from "../../store/reports";
import { type Category, tryParseCategoryOrAbuseIpdbNumber } from "../../domain/categories";
import { AppError } from "../../domain/errors";
import { type Ip, tryParseIp, unreportableReason } from "../../domain/ip";
import { MAX_DESCRIPTION_CHARS } from "../../domain/report-input";
import { DEFAULT_SCORING_PARAMETERS, retentionCutoffMs, type ScoringParameters, type Severity } from "../../domain/scoring";
import { inTransaction, type Store } from "../../store/database";
import { AddressChanges, type AddressChangePublisher } from "../changes/address-changes";
import type { AddressScorer } from "./scorer";

// ---------------------------------------------------------------------------------------------------------
// CSV (RFC 4180): quoted fields may hold commas, line breaks and doubled quotes; CRLF, LF or CR end a record.

export interface CsvRecord {
  /** 1-based line of the file on which the record starts. */
  line: number;
  fields: string[];
  /** Set when the record's quoting is broken; `fields` is then incomplete. */
  error?: string;
}

/** The records of a CSV text, in order. A byte-order mark is ignored; blank lines are skipped. */
export function* csvRecords(text: string): Generator<CsvRecord> {
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (i < n) {
    const startLine = line;
    const fields: string[] = [];
    let error: string | undefined;
    let field = "";
    let endOfRecord = false;
    while (!endOfRecord) {
      if (i < n && text.charCodeAt(i) === 34 /* " */) {
        // A quoted field: runs to the closing quote; "" is one quote; line breaks inside count as lines.
        i++;
        let closed = false;
        for (;;) {
          const q = text.indexOf('"', i);
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
        endOfRecord = true;
      } else {
        const c = text.charCodeAt(i);
        if (c === 44 /* , */) {
          i++;
          continue; // the next field (empty when a line end or the end of the text follows)
        }
        // A line end: CRLF, LF or CR.
        i += c === 13 && text.charCodeAt(i + 1) === 10 ? 2 : 1;
        line++;
        endOfRecord = true;
      }
    }
    if (fields.length === 1 && fields[0].trim() === "" && error === undefined) continue; // a blank line
    yield error === undefined ? { line: startLine, fields } : { line: startLine, fields, error };
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
  categories: Category[];
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

/** Reads the whole file; throws AppError only for a header that lacks a required column. */
export function parseReportCsv(text: string, options: ParseOptions): ParsedReportCsv {
  const params = options.params ?? DEFAULT_SCORING_PARAMETERS;
  const cutoff = retentionCutoffMs(options.nowMs, params);
  const rows: ImportRow[] = [];
  const bad: BadRow[] = [];
  let header = false;
  let positions: Record<Column, number> = { ip: 0, categories: 1, reportdate: 2, comment: 3 };
  let width: number | null = null;
  let first = true;
  for (const record of csvRecords(text)) {
    if (first) {
      first = false;
      if (record.error === undefined && record.fields.some((field) => columnName(field) === "ip")) {
        header = true;
        positions = headerPositions(record.fields);
        width = record.fields.length;
        continue;
      }
    }
    if (record.error !== undefined) {
      bad.push({ line: record.line, reason: record.error });
      continue;
    }
    const f = record.fields;
    if (width !== null ? f.length !== width : f.length !== 3 && f.length !== 4) {
      const expected = width !== null ? `${width} fields as in the header` : "3 or 4 fields (IP,Categories,ReportDate,Comment)";
      bad.push({ line: record.line, reason: `expected ${expected}, found ${f.length}; quote a field that holds a comma` });
      continue;
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

    const categories: Category[] = [];
    const unknown: string[] = [];
    for (const item of f[positions.categories].split(",")) {
      if (item.trim() === "") continue;
      const category = tryParseCategoryOrAbuseIpdbNumber(item);
      if (category === null) unknown.push(`"${item.trim()}"`);
      else if (!categories.includes(category)) categories.push(category);
    }
    if (unknown.length > 0) problems.push(`unknown ${unknown.length === 1 ? "category" : "categories"} ${unknown.join(", ")} (AbuseIPDB numbers 1-23 or category names)`);
    else if (categories.length === 0) problems.push("no category");

    const rawDate = f[positions.reportdate].trim();
    const reportedAtMs = parseIsoDateTime(rawDate);
    if (reportedAtMs === null) {
      problems.push(`ReportDate "${rawDate}" is not an ISO 8601 date and time with a UTC offset (e.g. 2026-11-21T08:00:00Z)`);
    } else if (reportedAtMs > options.nowMs) {
      problems.push(`ReportDate ${rawDate} is in the future`);
    } else if (reportedAtMs < cutoff) {
      problems.push(`ReportDate ${rawDate} is older than the retention period (${params.retentionDays} days): the report would never count`);
    }

    const comment = positions.comment < f.length ? f[positions.comment] : "";
    if (exceedsChars(comment, MAX_DESCRIPTION_CHARS)) problems.push(`Comment is longer than ${MAX_DESCRIPTION_CHARS} characters`);

    if (problems.length > 0 || ip === null || reportedAtMs === null) bad.push({ line: record.line, reason: problems.join("; ") });
    else rows.push({ line: record.line, ip, categories, reportedAtMs, comment });
  }
  return { rows, bad, header };
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

function exceedsChars(s: string, limit: number): boolean {
  if (s.length <= limit) return false;
  let count = 0;
  for (const _ of s) if (++count > limit) return true;
  return false;
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** Milliseconds of an ISO 8601 date-time with a UTC offset, or null (no offset, or a field out of range). */
export function parseIsoDateTime(text: string): number | null {
  const m = ISO_DATE_TIME.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return null;
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

// ---------------------------------------------------------------------------------------------------------
// Writing

export interface ImportOptions {
  reporterId: number;
  rows: readonly ImportRow[];
  /** The import's time: the first transition's time and the time addresses are scored at. */
  nowMs: number;
  severity?: Severity;
  /** Told of progress as (done, total) work units: one per report, then one per address rescored. */
  onProgress?: (done: number, total: number) => void;
}

export interface ImportSummary {
  rows: number;
  reports: number;
  addresses: number;
}

export interface ImportDeps {
  store: Store;
  scorer: AddressScorer;
  /** A running server's publisher, to update its index after the commit; null in a CLI process. */
  changes?: AddressChangePublisher | null;
}

/** Stores every row's reports in one transaction and rescores each address once. */
export function importReports(deps: ImportDeps, options: ImportOptions): ImportSummary {
  const { store, scorer } = deps;
  const now = Math.trunc(options.nowMs);
  const severity = options.severity ?? 3;
  const reportCount = options.rows.reduce((n, r) => n + r.categories.length, 0);
  const ips = new Map<string, Ip>();
  for (const r of options.rows) ips.set(r.ip.text, r.ip);
  const total = reportCount + ips.size;
  const progress = options.onProgress ?? (() => {});
  const step = Math.max(1, Math.floor(total / 200));
  const changes = new AddressChanges();
  inTransaction(store, () => {
    const { insertReport, insertTransition } = importStatements(store.sqlite);
    let done = 0;
    for (const row of options.rows) {
      for (const category of row.categories) {
        const id = Number(insertReport.run(row.ip.text, row.ip.version, options.reporterId, category, severity, row.comment, row.reportedAtMs, now).lastInsertRowid);
        insertTransition.run(id, now, options.reporterId);
        if (++done % step === 0) progress(done, total);
      }
    }
    for (const ip of ips.values()) {
      changes.set(ip, scorer.rescore(ip, now));
      if (++done % step === 0) progress(done, total);
    }
    progress(total, total);
  });
  deps.changes?.publish(changes);
  return { rows: options.rows.length, reports: reportCount, addresses: ips.size };
}
