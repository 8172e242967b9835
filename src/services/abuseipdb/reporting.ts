// `report`, `bulk-report` and `clear-address` of AbuseIPDB's API v2 (contract 13), through the same intake as
// `POST /v1/ip/report`: one budget, one 15-minute rule, the same credits and webhook events. An AbuseIPDB report
// names several categories; ours carry one each, so it becomes one report per distinct category of ours, written
// together (refused together as a duplicate). Reports made here have severity 3 and the source "abuseipdb".
//
// Decisions where the contract is open:
// - `timestamp` (report) and `ReportDate` (bulk-report) are the report's time when in the past and within
//   retention (the report decays from it); more than 5 minutes ahead, or older than retention, is refused
//   (report-params.ts). A report without one is dated when the appliance receives it.
// - A comment is cut to 1,024 characters, never refused (fail2ban sends up to 1,000 characters of log lines, and
//   other clients more).
// - A bulk-report's rows are reports of their own: a good row that could not be written is listed as `Not Saved:
//   ...` beside those stored; only when none went in is the answer the failure (docs/decisions.md).
// - `clear-address` deletes the reports (with their state history) and takes back what they earned, as a
//   rejection does; it does not reopen the 15-minute rule (docs/decisions.md).

import { AppError } from "../../domain/errors";
import type { Ip } from "../../domain/ip";
import type { Principal } from "../../domain/principal";
import type { AddressReports } from "../../store/address-reports";
import { inTransaction, isDiskFullError, type Store } from "../../store/database";
import { AddressChanges, type AddressChangePublisher } from "../changes/address-changes";
import { nextTurn } from "../event-loop-turns";
import type { Reputation } from "../lookups/reputation";
import { CreditLedger } from "../reports/credits";
import { DEFAULT_MAX_BATCH, type ReportService } from "../reports/intake";
import type { AddressScorer } from "../reports/scorer";
import type { Clock } from "../../domain/clock";
import { type InvalidRow, parseAbuseIpdbReport, parseBulkReport } from "./report-params";
import { confidenceOf } from "./wire";

export { ABUSEIPDB_SEVERITY, BULK_REPORT_MAX_LINES, categoriesFromNumbers, fitComment, reportableIp } from "./report-params";

export interface ReportingDeps {
  reports: ReportService;
  reputation: Reputation;
  addressReports: AddressReports;
  scorer: AddressScorer;
  addressChanges: AddressChangePublisher;
  store: Store;
  clock: Clock;
  /** Reports older than this many days are refused (their `timestamp` or `ReportDate`). */
  retentionDays: number;
}

/** The `error` of a bulk-report row that was good but could not be written. */
function notSaved(reason: unknown): string {
  if (isDiskFullError(reason)) return "Not Saved: Disk Full";
  if (reason instanceof AppError && reason.errorCode === "busy") return "Not Saved: Database Busy";
  return "Not Saved: Internal Error";
}

export class AbuseIpdbReporting {
  private readonly ledger: CreditLedger;

  constructor(private readonly deps: ReportingDeps) {
    this.ledger = new CreditLedger(deps.store);
  }

  /** `report`: the address's confidence after it. Throws duplicate_report within 15 minutes. */
  async report(principal: Principal, params: { ip: string | undefined; categories: string | undefined; comment: string | undefined; timestamp: string | undefined }): Promise<{ ipAddress: string; abuseConfidenceScore: number }> {
    const { ip, inputs, atMs } = parseAbuseIpdbReport(params, this.deps.clock.now(), this.deps.retentionDays);
    await this.deps.reports.submitAll(principal.userId, inputs, { source: "abuseipdb", atMs: atMs ?? undefined });
    return { ipAddress: ip.text, abuseConfidenceScore: confidenceOf(this.deps.reputation.scoreOf(ip)) };
  }

  /** `bulk-report`: every good row reported as by `report`; the others listed with why. */
  async bulkReport(principal: Principal, csv: string): Promise<{ savedReports: number; invalidReports: InvalidRow[] }> {
    const { good, invalid } = parseBulkReport(csv, this.deps.clock.now(), this.deps.retentionDays);
    // Checked whole before anything is written: a file over the limit changes nothing. Handed to the intake a
    // batch's worth of rows per turn of the event loop: all at once, the intake wrote batch after batch inside this
    // call, holding every request for the whole file (10,000 rows: 0.4 s).
    // Each outcome taken as it settles (Promise.allSettled after the turns would leave a rejection unhandled).
    const submitted: Promise<PromiseSettledResult<unknown>>[] = [];
    for (let i = 0; i < good.length; i++) {
      if (i > 0 && i % DEFAULT_MAX_BATCH === 0) await nextTurn();
      submitted.push(
        this.deps.reports.submitAll(principal.userId, good[i].inputs, { source: "abuseipdb", atMs: good[i].atMs ?? undefined }).then(
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
      const reports = addressReports.deleteOf(ip.text, principal.role === "admin" ? null : principal.userId, now - this.deps.reports.duplicateWindowMs);
      deleted = reports.length;
      if (deleted === 0) return;
      this.ledger.reverseDeleted(reports.map((r) => r.id), now);
      changes.set(ip, scorer.rescore(ip, now));
    });
    addressChanges.publish(changes);
    return { numReportsDeleted: deleted };
  }
}
