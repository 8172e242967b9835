// A piece of the import file's rows as plain strings and typed arrays, so a worker thread can parse pieces and
// hand them over cheaply: what the importer writes of each good row, and the bad rows as they are reported.

import { categoryBit } from "../../domain/categories";
import { CsvRecordStream, type BadRow, type ImportRow, type ParseOptions, ReportRowReader } from "./import-csv";

export interface RowBatch {
  /** Per good row: its address (normalized text), version, number of reports (categories), date and comment. */
  ips: string[];
  versions: Uint8Array;
  reportCounts: Uint8Array;
  reportedAtMs: Float64Array;
  comments: string[];
  /** Per report, row by row: its category's bit. */
  categoryBits: Uint8Array;
  bad: BadRow[];
}

export function rowBatchOf(rows: readonly ImportRow[], bad: BadRow[]): RowBatch {
  const reports = rows.reduce((n, r) => n + r.categories.length, 0);
  const batch: RowBatch = {
    ips: new Array<string>(rows.length),
    versions: new Uint8Array(rows.length),
    reportCounts: new Uint8Array(rows.length),
    reportedAtMs: new Float64Array(rows.length),
    comments: new Array<string>(rows.length),
    categoryBits: new Uint8Array(reports),
    bad,
  };
  let at = 0;
  rows.forEach((row, i) => {
    batch.ips[i] = row.ip.text;
    batch.versions[i] = row.ip.version;
    batch.reportCounts[i] = row.categories.length;
    batch.reportedAtMs[i] = row.reportedAtMs;
    batch.comments[i] = row.comment;
    for (const category of row.categories) batch.categoryBits[at++] = categoryBit(category);
  });
  return batch;
}


/** The batches' buffers, to transfer rather than copy. */
export function rowBatchBuffers(batch: RowBatch): ArrayBuffer[] {
  return [batch.versions, batch.reportCounts, batch.reportedAtMs, batch.categoryBits].map((a) => a.buffer as ArrayBuffer);
}

/** Text pieces in, row batches out: the CSV records and the row rules of import-csv.ts. */
export class PieceParser {
  private readonly records = new CsvRecordStream();
  private readonly reader: ReportRowReader;

  constructor(options: ParseOptions) {
    this.reader = new ReportRowReader(options);
  }

  /** Throws AppError for a header that lacks a required column. */
  push(text: string, final: boolean): RowBatch {
    const rows: ImportRow[] = [];
    const bad: BadRow[] = [];
    this.reader.read(this.records.push(text, final), rows, bad);
    return rowBatchOf(rows, bad);
  }
}
