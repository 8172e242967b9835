// `report`, `bulk-report` and `clear-address` of AbuseIPDB's API v2 (contract 13), through the same intake as
// `POST /v1/ip/report`: one budget, one 15-minute rule, the same credits and webhook events. An AbuseIPDB report
// names several categories; ours carry one each, so it becomes one report per distinct category of ours, written
// together (refused together as a duplicate). Reports made here have severity 3 and the source "abuseipdb".
//
// Decisions where the contract is open:
// - `timestamp` (report) and `ReportDate` (bulk-report) are checked but not kept: a live report is dated when the
//   appliance receives it, so a client cannot backdate or postdate what counts (history goes in with
//   `abuseintel import reports`, which keeps the file's dates).
// - A comment is cut to 1,024 characters, never refused (fail2ban sends up to 1,000 characters of log lines, and
//   other clients more).
// - A bulk-report's rows are reports of their own: a good row that could not be written is listed as `Not Saved:
//   ...` beside those stored; only when none went in is the answer the failure (docs/decisions.md).
// - `clear-address` deletes the reports (with their state history) and takes back what they earned, as a
//   rejection does; it does not reopen the 15-minute rule (docs/decisions.md).

import { type Category, categoryFromAbuseIpdb } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { type Ip, tryParseIp, unreportableReason } from "../../domain/ip";
import type { Principal } from "../../domain/principal";
import { MAX_DESCRIPTION_CHARS, type ReportInput } from "../../domain/report-input";
import type { Severity } from "../../domain/scoring";
import type { AddressReports } from "../../store/address-reports";
import { inTransaction, isDiskFullError, type Store } from "../../store/database";
import { AddressChanges, type AddressChangePublisher } from "../changes/address-changes";
import { nextTurn } from "../event-loop-turns";
import type { Reputation } from "../lookups/reputation";
import { CreditLedger } from "../reports/credits";
import { csvRecords, parseIsoDateTime } from "../reports/import";
import { DEFAULT_MAX_BATCH, DUPLICATE_WINDOW_MS, type ReportService } from "../reports/intake";
import type { AddressScorer } from "../reports/scorer";
import { ParameterError, confidenceOf } from "./wire";

export const ABUSEIPDB_SEVERITY: Severity = 3;
export const BULK_REPORT_MAX_LINES = 10_000;

export interface ReportingDeps {
  reports: ReportService;
  reputation: Reputation;
  addressReports: AddressReports;
  scorer: AddressScorer;
  addressChanges: AddressChangePublisher;
  store: Store;
  clock: Clock;
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

/** The `error` of a bulk-report row that was good but could not be written. */
function notSaved(reason: unknown): string {
  if (isDiskFullError(reason)) return "Not Saved: Disk Full";
  if (reason instanceof AppError && reason.errorCode === "busy") return "Not Saved: Database Busy";
  return "Not Saved: Internal Error";
}

const inputsOf = (ip: Ip, categories: readonly Category[], comment: string): ReportInput[] =>
  categories.map((category) => ({ ip, category, severity: ABUSEIPDB_SEVERITY, description: comment, evidence: null, shape: "B" as const }));

export class AbuseIpdbReporting {
  private readonly ledger: CreditLedger;

  constructor(private readonly deps: ReportingDeps) {
    this.ledger = new CreditLedger(deps.store);
  }

  /** `report`: the address's confidence after it. Throws duplicate_report within 15 minutes. */
  async report(principal: Principal, params: { ip: string | undefined; categories: string | undefined; comment: string | undefined; timestamp: string | undefined }): Promise<{ ipAddress: string; abuseConfidenceScore: number }> {
    if (params.ip === undefined || params.ip === "") throw new ParameterError("ip", "The ip field is required.");
    const ip = reportableIp(params.ip);
    if (typeof ip === "string") throw new ParameterError("ip", `The ip must be a valid, reportable IPv4 or IPv6 address: ${ip}.`);
    if (params.categories === undefined || params.categories === "") throw new ParameterError("categories", "The categories field is required.");
    const categories = categoriesFromNumbers(params.categories);
    if (categories === null) throw new ParameterError("categories", "The categories must be AbuseIPDB category numbers 1-23, separated by commas.");
    if (params.timestamp !== undefined && params.timestamp !== "" && parseIsoDateTime(params.timestamp) === null) {
      throw new ParameterError("timestamp", "The timestamp must be an ISO 8601 date and time with a UTC offset.");
    }
    await this.deps.reports.submitAll(principal.userId, inputsOf(ip, categories, fitComment(params.comment ?? "")), { source: "abuseipdb" });
    return { ipAddress: ip.text, abuseConfidenceScore: confidenceOf(this.deps.reputation.scoreOf(ip)) };
  }

  /** `bulk-report`: every good row reported as by `report`; the others listed with why. */
  async bulkReport(principal: Principal, csv: string): Promise<{ savedReports: number; invalidReports: { error: string; input: string; rowNumber: number }[] }> {
    const invalid: { error: string; input: string; rowNumber: number }[] = [];
    const good: { rowNumber: number; input: string; reports: ReportInput[] }[] = [];
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
      if (date !== "" && parseIsoDateTime(date) === null) {
        invalid.push({ error: "Invalid Report Date", input: raw, rowNumber });
        continue;
      }
      const comment = positions.comment >= 0 ? (fields[positions.comment] ?? "") : "";
      good.push({ rowNumber, input: raw, reports: inputsOf(ip, categories, fitComment(comment)) });
    }
    if (reports === 0) throw new ParameterError("csv", "The csv holds no reports.");
    // Checked whole before anything is written: a file over the limit changes nothing. Handed to the intake a
    // batch's worth of rows per turn of the event loop: all at once, the intake wrote batch after batch inside this
    // call, holding every request for the whole file (10,000 rows: 0.4 s).
    // Each outcome taken as it settles (Promise.allSettled after the turns would leave a rejection unhandled).
    const submitted: Promise<PromiseSettledResult<unknown>>[] = [];
    for (let i = 0; i < good.length; i++) {
      if (i > 0 && i % DEFAULT_MAX_BATCH === 0) await nextTurn();
      submitted.push(
        this.deps.reports.submitAll(principal.userId, good[i].reports, { source: "abuseipdb" }).then(
          (value) => ({ status: "fulfilled", value }),
          (reason: unknown) => ({ status: "rejected", reason }),
        ),
      );
    }
    const outcomes = await Promise.all(submitted);
    let saved = 0;
    let failure: unknown = null;
    outcomes.forEach((outcome, i) => {
      if (outcome.status === "fulfilled") {
        saved++;
      } else if (outcome.reason instanceof AppError && outcome.reason.errorCode === "duplicate_report") {
        invalid.push({ error: "Duplicate IP", input: good[i].input, rowNumber: good[i].rowNumber });
      } else {
        failure ??= outcome.reason;
        invalid.push({ error: notSaved(outcome.reason), input: good[i].input, rowNumber: good[i].rowNumber });
      }
    });
    // Nothing of the file went in: the failure itself is the answer (a full disk or a busy database is 503, and
    // the client sends the file again). Otherwise the rows that did go in must be counted, so the answer is 200.
    if (saved === 0 && failure !== null) throw failure;
    // An unexpected failure answered inside a 200 would otherwise go unlogged (an answered 500 is logged).
    if (failure !== null && !(failure instanceof AppError)) console.error("bulk-report: rows not saved:", failure);
    invalid.sort((a, b) => a.rowNumber - b.rowNumber);
    return { savedReports: saved, invalidReports: invalid };
  }

  /**
   * `clear-address`: an admin clears every report of the address, anyone else their own; rescored at once. The
   * deleted reports' credits are taken back, and their times still count for the 15-minute rule.
   */
  clearAddress(principal: Principal, ip: Ip): { numReportsDeleted: number } {
    const { store, addressReports, scorer, addressChanges, clock } = this.deps;
    const changes = new AddressChanges();
    let deleted = 0;
    inTransaction(store, () => {
      const now = clock.now();
      const reports = addressReports.deleteOf(ip.text, principal.role === "admin" ? null : principal.userId, now - DUPLICATE_WINDOW_MS);
      deleted = reports.length;
      if (deleted === 0) return;
      this.ledger.reverseDeleted(reports.map((r) => r.id), now);
      changes.set(ip, scorer.rescore(ip, now));
    });
    addressChanges.publish(changes);
    return { numReportsDeleted: deleted };
  }
}
