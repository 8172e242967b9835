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
// - An address inside networks the feeds list counts those listings in its score, as the server's scorer counts
//   them (contract 12): the listings are read from the store when the import starts.
//
// Streaming: the file is read and parsed a piece at a time and each piece's reports written at once, so memory
// holds a few pieces, not the file (a large file's pieces are parsed on a worker thread, a few ahead of the
// writes: piece-parsers.ts). The import is still all or nothing: everything is written in one transaction,
// committed only after the last row (a broken header, a failed write or an interrupted read rolls it all back).
// How it is written is in report-importer.ts.

import type { Severity } from "../../domain/scoring";
import type { BadRow, ImportRow, ParseOptions } from "./import-csv";
import { inThreadParsers, startParseWorker } from "./piece-parsers";
import type { RowBatch } from "./row-batch";
import { type ImportDeps, type ImportScoring, type ImportSummary, ReportImporter } from "./report-importer";

export { csvRecords, CsvRecordStream, parseIsoDateTime, parseReportCsv } from "./import-csv";
export type { BadRow, CsvRecord, ImportRow, ParsedReportCsv, ParseOptions } from "./import-csv";
export type { ImportDeps, ImportScoring, ImportSummary } from "./report-importer";

export interface ImportOptions {
  reporterId: number;
  rows: readonly ImportRow[];
  /** The import's time: the first transition's time and the time addresses are scored at. */
  nowMs: number;
  severity?: Severity;
  /** Told of progress as (done, total) work units: one per report, then one per address rescored. */
  onProgress?: (done: number, total: number) => void;
}

/** Stores every row's reports in one transaction and rescores each address once. */
export function importReports(deps: ImportDeps, options: ImportOptions): ImportSummary {
  const reportCount = options.rows.reduce((n, r) => n + r.categories.length, 0);
  const ips = new Set<string>();
  for (const r of options.rows) ips.add(r.ip.text);
  const total = reportCount + ips.size;
  const progress = options.onProgress ?? (() => {});
  const importer = new ReportImporter(deps, options);
  importer.begin();
  try {
    importer.write(options.rows);
    progress(reportCount, total);
    const summary = importer.finish((addresses) => progress(reportCount + addresses, total));
    progress(total, total);
    return summary;
  } catch (error) {
    importer.abort();
    throw error;
  }
}

/** What a streamed import is doing: reading rows, rescoring addresses, or building the indexes again. */
export type ImportPhase = "rows" | "addresses" | "indexes";

export interface StreamImportOptions extends ParseOptions {
  reporterId: number;
  severity?: Severity;
  /** Each bad row as it is found, in file order. */
  onBadRow?: (bad: BadRow) => void;
  /** `done` rows read, addresses rescored or indexes built; `total` when known (the indexes' count). */
  onProgress?: (phase: ImportPhase, done: number, total: number | null) => void;
  /** See ReportImporterOptions.bulkFromReports. */
  bulkFromReports?: number;
  /** A large import's addresses scored on a worker thread (default true); see ReportImporterOptions. */
  scoringWorker?: boolean;
  /** See ReportImporterOptions.addressesPerBatch. */
  addressesPerBatch?: number;
  /** Parse the pieces on a worker thread while the rows before are written (for a large file; default false). */
  parseWorker?: boolean;
}

export interface StreamImportSummary extends ImportSummary {
  badRows: number;
  scoring: ImportScoring;
}

/**
 * Imports a CSV arriving as text pieces (split anywhere, even inside a record): each piece's rows are parsed
 * and written before the next is read; one transaction over the whole import, committed after the last piece.
 * Throws (having rolled back) on a broken header or a failed read or write.
 */
export async function importReportStream(deps: ImportDeps, pieces: AsyncIterable<string>, options: StreamImportOptions): Promise<StreamImportSummary> {
  const importer = new ReportImporter(deps, { ...options, scoringWorker: options.scoringWorker ?? true });
  const progress = options.onProgress ?? (() => {});
  const parsers = (options.parseWorker && (await startParseWorker(options, WORKER_READY_WAIT_MS))) || inThreadParsers(options);
  let rowCount = 0;
  let badRows = 0;
  const take = (batch: RowBatch) => {
    importer.writeBatch(batch);
    rowCount += batch.ips.length + batch.bad.length;
    badRows += batch.bad.length;
    if (options.onBadRow) for (const b of batch.bad) options.onBadRow(b);
    progress("rows", rowCount, null);
  };
  // Pieces parsed ahead (on the worker) while the rows of the ones before are written.
  const parsed: Promise<RowBatch>[] = [];
  const parse = (text: string, final: boolean) => {
    const batch = parsers.parse(text, final);
    batch.catch(() => {}); // awaited in order below; the first that fails throws
    parsed.push(batch);
  };
  importer.begin();
  try {
    for await (const piece of pieces) {
      parse(piece, false);
      if (parsed.length >= PIECES_AHEAD) take(await parsed.shift()!);
    }
    parse("", true);
    for (const batch of parsed) take(await batch);
    const summary = await importer.finishAsync(
      (addresses) => progress("addresses", addresses, null),
      (built, indexes) => progress("indexes", built, indexes),
    );
    return { ...summary, badRows };
  } catch (error) {
    importer.abort();
    throw error;
  } finally {
    parsers.close();
  }
}

const PIECES_AHEAD = 4;
const WORKER_READY_WAIT_MS = 2_000;
