// What AbuseIPDB's `report` and `bulk-report` ask for, read and checked before anything is written (contract 13):
// the same on a primary, which writes the reports, and on an edge, which queues them (contract 18). A report's
// `timestamp` (a bulk row's `ReportDate`) is its time when in the past and within retention (report-time.ts).

import { type Category, categoryFromAbuseIpdb } from "../../domain/categories";
import { type Ip, tryParseIp, unreportableReason } from "../../domain/ip";
import { MAX_DESCRIPTION_CHARS, type ReportInput } from "../../domain/report-input";
import { reportTimeMessage, reportTimeOf } from "../../domain/report-time";
import { DAY_MS, type Severity } from "../../domain/scoring";
import { csvRecords, parseIsoDateTime } from "../reports/import";
import { ParameterError } from "./wire";

export const ABUSEIPDB_SEVERITY: Severity = 3;
export const BULK_REPORT_MAX_LINES = 10_000;

/** One AbuseIPDB report: one of ours per distinct category, and its own time (null: dated on arrival). */
export interface AbuseIpdbReport {
  ip: Ip;
  inputs: ReportInput[];
  atMs: number | null;
}

export interface BulkRow extends AbuseIpdbReport {
  rowNumber: number;
  input: string;
}

export interface InvalidRow {
  error: string;
  input: string;
  rowNumber: number;
}

/** The distinct categories of ours for AbuseIPDB numbers given as `18,22` (or one number); null when one is bad. */
export function categoriesFromNumbers(text: string): Category[] | null {
  const out: Category[] = [];
  const items = text.split(",").map((s) => s.trim());
  if (items.length === 0 || items.every((s) => s === "")) return null;
  for (const item of items) {
    if (!/^\d{1,2}$/.test(item)) return null;
    const category = categoryFromAbuseIpdb(Number(item));
    if (category === null) return null;
    if (!out.includes(category)) out.push(category);
  }
  return out;
}

/** A comment cut to what a report's description may hold, on a character (code point) boundary. */
export function fitComment(comment: string): string {
  if (comment.length <= MAX_DESCRIPTION_CHARS) return comment;
  return Array.from(comment).slice(0, MAX_DESCRIPTION_CHARS).join("");
}

/** The address of a report: a valid, reportable one, else null with the reason. */
export function reportableIp(text: string): Ip | string {
  const ip = tryParseIp(text.trim());
  if (typeof ip === "string") return ip;
  return unreportableReason(ip) ?? ip;
}

const inputsOf = (ip: Ip, categories: readonly Category[], comment: string): ReportInput[] =>
  categories.map((category) => ({ ip, category, severity: ABUSEIPDB_SEVERITY, description: comment, evidence: null, shape: "B" as const }));

/** `report`'s parameters, or ParameterError naming the first bad one. */
export function parseAbuseIpdbReport(
  params: { ip: string | undefined; categories: string | undefined; comment: string | undefined; timestamp: string | undefined },
  nowMs: number,
  retentionDays: number,
): AbuseIpdbReport {
  if (params.ip === undefined || params.ip === "") throw new ParameterError("ip", "The ip field is required.");
  const ip = reportableIp(params.ip);
  if (typeof ip === "string") throw new ParameterError("ip", `The ip must be a valid, reportable IPv4 or IPv6 address: ${ip}.`);
  if (params.categories === undefined || params.categories === "") throw new ParameterError("categories", "The categories field is required.");
  const categories = categoriesFromNumbers(params.categories);
  if (categories === null) throw new ParameterError("categories", "The categories must be AbuseIPDB category numbers 1-23, separated by commas.");
  let atMs: number | null = null;
  if (params.timestamp !== undefined && params.timestamp !== "") {
    const given = parseIsoDateTime(params.timestamp);
    if (given === null) throw new ParameterError("timestamp", "The timestamp must be an ISO 8601 date and time with a UTC offset.");
    const at = reportTimeOf(given, nowMs, retentionDays * DAY_MS);
    if (typeof at === "string") throw new ParameterError("timestamp", `The timestamp ${reportTimeMessage(at, retentionDays)}`);
    atMs = at;
  }
  return { ip, inputs: inputsOf(ip, categories, fitComment(params.comment ?? "")), atMs };
}

/**
 * `bulk-report`'s csv: the good rows and the bad ones with AbuseIPDB's reasons. Throws ParameterError for the
 * whole file (no reports, or more than BULK_REPORT_MAX_LINES).
 */
export function parseBulkReport(csv: string, nowMs: number, retentionDays: number): { good: BulkRow[]; invalid: InvalidRow[] } {
  const invalid: InvalidRow[] = [];
  const good: BulkRow[] = [];
  let reports = 0;
  let first = true;
  let positions = { ip: 0, categories: 1, date: 2, comment: 3 };
  for (const record of csvRecords(csv)) {
    const fields = record.fields;
    if (first) {
      first = false;
      const names = fields.map((f) => f.trim().toLowerCase().replace(/[\s_-]/g, ""));
      if (record.error === undefined && names.includes("ip")) {
        positions = { ip: names.indexOf("ip"), categories: names.indexOf("categories"), date: names.indexOf("reportdate"), comment: names.indexOf("comment") };
        continue;
      }
    }
    // Counted after the header: a csv without one may hold as many reports as one with it.
    if (++reports > BULK_REPORT_MAX_LINES) throw new ParameterError("csv", `The csv may hold at most ${BULK_REPORT_MAX_LINES} reports.`);
    const rowNumber = record.line;
    const raw = fields[positions.ip] ?? "";
    if (record.error !== undefined || fields.length < 3) {
      invalid.push({ error: "Invalid Row", input: raw, rowNumber });
      continue;
    }
    const ip = reportableIp(raw);
    if (typeof ip === "string") {
      invalid.push({ error: "Invalid IP", input: raw, rowNumber });
      continue;
    }
    const categories = categoriesFromNumbers(fields[positions.categories] ?? "");
    if (categories === null) {
      invalid.push({ error: "Invalid Category", input: raw, rowNumber });
      continue;
    }
    const date = (fields[positions.date] ?? "").trim();
    let atMs: number | null = null;
    if (date !== "") {
      const given = parseIsoDateTime(date);
      const at = given === null ? null : reportTimeOf(given, nowMs, retentionDays * DAY_MS);
      if (at === null || typeof at === "string") {
        invalid.push({ error: "Invalid Report Date", input: raw, rowNumber });
        continue;
      }
      atMs = at;
    }
    const comment = positions.comment >= 0 ? (fields[positions.comment] ?? "") : "";
    good.push({ rowNumber, input: raw, ip, inputs: inputsOf(ip, categories, fitComment(comment)), atMs });
  }
  if (reports === 0) throw new ParameterError("csv", "The csv holds no reports.");
  return { good, invalid };
}
