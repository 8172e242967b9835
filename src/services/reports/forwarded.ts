// Reports forwarded by an edge (contract 18): each group of a batch goes through the same intake as
// `POST /v1/ip/report` (validation again, the duplicate rule per forward account, credits, webhook events,
// scores), credited to the forward key's account and dated with its own time. The intake stores each forwarded
// id once with its first result, so a batch sent again stores nothing twice and answers as the first time.
// A refusal (invalid, expired, a duplicate) is a per-report result; a failure to store (busy, disk full) fails the
// whole batch, which the edge sends again.

import { AppError } from "../../domain/errors";
import type { Clock } from "../../domain/clock";
import type { ForwardedReportWire } from "../../domain/forwarded-report";
import { parseReportInput, type ReportInput } from "../../domain/report-input";
import { reportTimeMessage, reportTimeOf } from "../../domain/report-time";
import { DAY_MS } from "../../domain/scoring";
import type { ForwardedResult } from "../../store/forwarded-reports";
import { nextTurn } from "../event-loop-turns";
import { AlreadyForwarded, DEFAULT_MAX_BATCH, type ReportService } from "./intake";

export interface ForwardedReportsDeps {
  reports: ReportService;
  clock: Clock;
  retentionDays: number;
}

/** One request's reports: stored or refused together. */
interface Group {
  items: ForwardedReportWire[];
}

export class ForwardedReports {
  constructor(private readonly deps: ForwardedReportsDeps) {}

  /** The result of each report of the batch, in its order. Throws (the whole batch) when something could not be stored. */
  async receive(userId: number, batch: readonly ForwardedReportWire[]): Promise<ForwardedResult[]> {
    const groups: Group[] = [];
    for (const item of batch) {
      const last = groups.at(-1);
      if (last !== undefined && last.items[0]!.group === item.group) last.items.push(item);
      else groups.push({ items: [item] });
    }
    const results = new Map<string, ForwardedResult>();
    let failure: unknown = null;
    const pending: Promise<void>[] = [];
    for (let g = 0; g < groups.length; g++) {
      if (g > 0 && g % DEFAULT_MAX_BATCH === 0) await nextTurn();
      const { items } = groups[g]!;
      const ids = items.map((i) => i.id);
      const refuse = (code: string, message: string) => {
        for (const id of ids) results.set(id, { id, status: "refused", code, message });
      };
      const parsed = this.inputsOf(items);
      if (typeof parsed === "string") {
        // Refused before the intake, so not stored: the same report is refused the same way if sent again.
        refuse("validation_failed", parsed);
        continue;
      }
      pending.push(
        this.deps.reports.submitAll(userId, parsed.inputs, { source: items[0]!.source, atMs: parsed.atMs, forwardIds: ids }).then(
          (accepted) => accepted.forEach((a, k) => results.set(ids[k]!, { id: ids[k]!, status: "accepted", reportId: a.reportId })),
          (error: unknown) => {
            if (error instanceof AlreadyForwarded) for (const r of error.results) results.set(r.id, r);
            else if (error instanceof AppError && error.errorCode === "duplicate_report") refuse(error.errorCode, error.message);
            else failure ??= error;
          },
        ),
      );
    }
    await Promise.all(pending);
    if (failure !== null) throw failure;
    return batch.map((item) => results.get(item.id) ?? { id: item.id, status: "refused", code: "internal_error", message: "no result" });
  }

  /** The group's reports and its time, or why it is refused. */
  private inputsOf(items: readonly ForwardedReportWire[]): { inputs: ReportInput[]; atMs: number } | string {
    const { clock, retentionDays } = this.deps;
    const now = clock.now();
    const first = items[0]!;
    const at = reportTimeOf(first.ownTime ? first.at : Math.min(first.at, now), now, retentionDays * DAY_MS);
    if (typeof at === "string") return `the report's time ${reportTimeMessage(at, retentionDays)}`;
    const inputs: ReportInput[] = [];
    for (const item of items) {
      try {
        inputs.push(parseReportInput(item.report));
      } catch (error) {
        return error instanceof AppError ? error.message : String(error);
      }
      if (inputs.at(-1)!.ip.text !== inputs[0]!.ip.text) return "the reports of one request must be about one address";
    }
    return { inputs, atMs: at };
  }
}
