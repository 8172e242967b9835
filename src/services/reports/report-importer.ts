// Writes an import's reports inside one transaction that stays open while the file is read, then rescores every
// address the import touched and commits.
//
// A small import is written as live reports are: each report into `reports` and its indexes, then each address
// rescored by the scorer (one SELECT of its counting reports, one upsert). A large one would spend most of its
// time in the indexes (four on `reports`, two on `addresses`, each keyed by address, time or status, so each
// insert lands on a random page), so once it has written `bulkFromReports` reports the importer drops the
// indexes of `reports` and appends the rest. At the end it builds the address index again (by sorting, as
// CREATE INDEX does), walks it once in address order, where each address's reports (the imported ones and the
// ones it held before) sit together, scores every touched address with the functions the scorer uses, and
// writes their rows in address order; then it builds the other indexes. It remembers one byte per imported
// report (its category: the rest of an imported report is the import's reporter, severity and status), so the
// walk reads only the index, and looks up only the older reports of touched addresses. Scores are the scorer's
// to the bit: the same reports, the same time, the same functions.

import { CATEGORIES, categoryBit, type Category } from "../../domain/categories";
import { parseIp } from "../../domain/ip";
import { DEFAULT_SCORING_PARAMETERS, retentionCutoffMs, type ScoringParameters, type Severity } from "../../domain/scoring";
import type { Store } from "../../store/database";
import { addressWriter } from "../../store/address-rows";
import { addressRowCount } from "../../store/index-generation";
import { ADDRESS_INDEX, REPORTS_PER_INSERT, reportImportStatements, type SavedIndex } from "../../store/report-import";
import { importStatements } from "../../store/reports";
import { AddressChanges, type AddressChangePublisher } from "../changes/address-changes";
import type { ImportRow } from "./import-csv";
import { type RowBatch, rowBatchOf } from "./row-batch";
import { type AddressBatch, AddressBatchBuilder, SCORED_FIELDS, type ScoredAddressBatch, scoreAddressBatch } from "./address-batch-scoring";
import { type BatchScorer, inThreadScorer, type ScoringWorker, startScoringWorker } from "./batch-scorer";
import type { AddressScorer, RescoreOf } from "./scorer";

export interface ImportSummary {
  rows: number;
  reports: number;
  addresses: number;
}

/** How the addresses were rescored: one by one by the scorer, or from the address index on a worker or this thread. */
export type ImportScoring = "per address" | "worker" | "this thread";

export interface ImportDeps {
  store: Store;
  /**
   * Rescoring of a small import; its parameters must be `params`. A large import scores its batches with the
   * scorer's `listingsOf`, so an address inside a listed network counts its listings either way.
   */
  scorer: AddressScorer;
  /** The scoring parameters of a large import's own rescoring (default: the defaults). */
  params?: ScoringParameters;
  /** A running server's publisher, to update its index after the commit; null in a CLI process. */
  changes?: AddressChangePublisher | null;
}

export interface ReportImporterOptions {
  reporterId: number;
  /** The import's time: the first transition's time and the time addresses are scored at. */
  nowMs: number;
  severity?: Severity;
  /**
   * After this many reports the indexes of `reports` are dropped and rebuilt at the end (default: 50,000 or a
   * quarter of the reports already stored, whichever is more: rebuilding sorts the whole table).
   */
  bulkFromReports?: number;
  /** A large import's addresses scored on a worker thread (finishAsync only), overlapping SQLite's work. */
  scoringWorker?: boolean;
  /** Addresses per scoring batch (default 4,096). */
  addressesPerBatch?: number;
}

const MIN_BULK_REPORTS = 50_000;
/** The page cache while a (small) import inserts into the indexes of `reports`: fewer of their pages reread. */
const IMPORT_CACHE_KIB = 32 * 1024;
const CHANGE_LOG_BATCH = 10_000;
/** Addresses per scoring batch, and batches in flight to the worker. */
const BATCH_ADDRESSES = 4_096;
const PIPELINE_DEPTH = 4;
/** Addresses a small import rescores per statement that reads their reports. */
const RESCORE_CHUNK = 1_000;
/** How long the end of an import waits for a worker still loading before it scores on its own thread. */
const WORKER_READY_WAIT_MS = 2_000;

export class ReportImporter {
  private readonly now: number;
  private readonly severity: Severity;
  private readonly params: ScoringParameters;
  private readonly statements;
  private readonly sql;
  /** Address rows written as the scorer writes them. */
  private readonly addressRows;
  /** The highest report id before the import: the import's reports are above it. */
  private lastOldId = 0;
  private bulkFrom = MIN_BULK_REPORTS;
  private droppedIndexes: SavedIndex[] | null = null;
  private previousCacheKib: number | null = null;
  private rows = 0;
  private reports = 0;
  /** categoryBit of each imported report, at its id − firstNewId. */
  private categoryBits = new Uint8Array(1 << 16);
  private firstNewId = 0;
  private worker: ScoringWorker | null = null;

  constructor(
    private readonly deps: ImportDeps,
    private readonly options: ReportImporterOptions,
  ) {
    this.now = Math.trunc(options.nowMs);
    this.severity = options.severity ?? 3;
    this.params = deps.params ?? DEFAULT_SCORING_PARAMETERS;
    this.statements = importStatements(deps.store.sqlite);
    this.sql = reportImportStatements(deps.store.sqlite);
    this.addressRows = addressWriter(deps.store);
  }

  /** Opens the transaction (taking the write lock). */
  begin(): void {
    this.sql.begin();
    this.previousCacheKib = this.sql.cacheKib();
    if (this.previousCacheKib < IMPORT_CACHE_KIB) this.sql.setCacheKib(IMPORT_CACHE_KIB);
    this.lastOldId = this.sql.lastReportId();
    this.bulkFrom = this.options.bulkFromReports ?? Math.max(MIN_BULK_REPORTS, Math.ceil(this.sql.reportCount() / 4));
  }

  /** Writes the rows' reports, in order: report ids follow the file. */
  write(rows: readonly ImportRow[]): void {
    this.writeBatch(rowBatchOf(rows, []));
  }

  /** write() of rows as a parser hands them over (row-batch.ts). */
  writeBatch(batch: RowBatch): void {
    const { insertReport } = this.statements;
    const { insertReports } = this.sql;
    const { reporterId } = this.options;
    const { severity, now } = this;
    // Reports go in REPORTS_PER_INSERT at a time; the rest of the rows' reports one by one at the end.
    const values: (string | number)[] = [];
    const bits: number[] = [];
    let report = 0;
    for (let row = 0; row < batch.ips.length; row++) {
      const ip = batch.ips[row];
      const version = batch.versions[row];
      const count = batch.reportCounts[row];
      for (let k = 0; k < count; k++) {
        const bit = batch.categoryBits[report++];
        values.push(ip, version, reporterId, CATEGORIES[bit], severity, batch.comments[row], batch.reportedAtMs[row], now);
        bits.push(bit);
        if (bits.length === REPORTS_PER_INSERT) {
          const last = Number(insertReports.run(...values).lastInsertRowid);
          bits.forEach((b, i) => this.noteCategory(last - REPORTS_PER_INSERT + 1 + i, b));
          values.length = 0;
          bits.length = 0;
        }
      }
      this.reports += count;
      if (this.droppedIndexes === null && this.reports >= this.bulkFrom) {
        this.droppedIndexes = this.sql.dropReportIndexes();
        // Started now, so it has loaded by the time the rows are all written.
        if (this.options.scoringWorker) this.worker = startScoringWorker();
        // Appends and sorts from here on: a large cache only makes SQLite's sorts hold more memory, not run faster.
        this.restoreCache();
      }
    }
    bits.forEach((bit, i) => {
      const v = values.slice(i * 8, i * 8 + 8) as [string, number, number, string, number, string, number, number];
      this.noteCategory(Number(insertReport.run(...v).lastInsertRowid), bit);
    });
    this.rows += batch.ips.length;
  }

  /**
   * Writes the first transitions, rescores the touched addresses (`onAddress(n)` after each) on this thread,
   * builds the dropped indexes again (`onIndex(built, of)`), commits, and publishes the changes.
   */
  finish(onAddress?: (done: number) => void, onIndex?: (built: number, of: number) => void): ImportSummary {
    const rescore = this.startRescore();
    if (rescore.bulk) for (const { batch, ips } of this.addressBatches()) this.writeScored(ips, scoreAddressBatch(batch), rescore, onAddress);
    else this.rescoreEach(rescore, onAddress);
    return this.complete(rescore, onIndex);
  }

  /** finish(), with a large import's scoring on the worker thread when it started and is ready. */
  async finishAsync(onAddress?: (done: number) => void, onIndex?: (built: number, of: number) => void): Promise<ImportSummary & { scoring: ImportScoring }> {
    let scoring: ImportScoring = "per address";
    try {
      const rescore = this.startRescore();
      if (rescore.bulk) {
        // Its "ready" (or its failure) is a message this thread has not read while it was busy writing rows.
        const scorer: BatchScorer = this.worker && (await this.worker.whenReady(WORKER_READY_WAIT_MS)) ? this.worker : inThreadScorer;
        scoring = scorer === inThreadScorer ? "this thread" : "worker";
        const pending: { ips: string[]; scored: Promise<ScoredAddressBatch> }[] = [];
        for (const { batch, ips } of this.addressBatches()) {
          const scored = scorer.score(batch);
          // Awaited below in order; a worker failure rejects them all and the first one awaited throws.
          scored.catch(() => {});
          pending.push({ ips, scored });
          if (pending.length >= PIPELINE_DEPTH) {
            const next = pending.shift()!;
            this.writeScored(next.ips, await next.scored, rescore, onAddress);
          }
        }
        for (const next of pending) this.writeScored(next.ips, await next.scored, rescore, onAddress);
      } else {
        this.rescoreEach(rescore, onAddress);
      }
      return { ...this.complete(rescore, onIndex), scoring };
    } finally {
      this.closeWorker();
    }
  }

  /** Rolls everything back (the dropped indexes come back with it). */
  abort(): void {
    this.closeWorker();
    this.sql.rollback();
    this.restoreCache();
  }

  private closeWorker(): void {
    this.worker?.close();
    this.worker = null;
  }

  /** The first transitions, and for a large import the address index built and the addresses' indexes dropped. */
  private startRescore(): Rescore {
    this.sql.insertTransitionsAfter.run(this.lastOldId, this.now, this.options.reporterId);
    const rescore: Rescore = { bulk: this.droppedIndexes !== null, changes: this.deps.changes ? new AddressChanges() : null, toBuild: [], logsChanges: false, changed: [], done: 0 };
    if (this.droppedIndexes !== null) {
      const addressIndex = this.droppedIndexes.find((index) => index.name === ADDRESS_INDEX);
      if (!addressIndex) throw new Error(`the index ${ADDRESS_INDEX} of reports is missing`);
      this.sql.restore(addressIndex);
      // With fewer addresses stored than reports imported, their indexes are built again afterwards too.
      const addressObjects = addressRowCount(this.deps.store) <= this.reports ? this.sql.dropAddressIndexesAndTriggers() : [];
      rescore.logsChanges = addressObjects.length > 0;
      rescore.toBuild = [...this.droppedIndexes.filter((index) => index !== addressIndex), ...addressObjects];
    }
    return rescore;
  }

  /** The dropped indexes and triggers built again, the commit, the changes published. */
  private complete(rescore: Rescore, onIndex?: (built: number, of: number) => void): ImportSummary {
    if (rescore.changed.length > 0) this.sql.logAddressChanges(rescore.changed);
    rescore.toBuild.forEach((index, i) => {
      this.sql.restore(index);
      onIndex?.(i + 1, rescore.toBuild.length);
    });
    this.sql.commit();
    this.restoreCache();
    if (rescore.changes) this.deps.changes?.publish(rescore.changes);
    return { rows: this.rows, reports: this.reports, addresses: rescore.done };
  }

  private noteCategory(id: number, bit: number): void {
    if (this.firstNewId === 0) this.firstNewId = id;
    const at = id - this.firstNewId;
    if (at >= this.categoryBits.length) {
      const grown = new Uint8Array(Math.max(at + 1, this.categoryBits.length * 2));
      grown.set(this.categoryBits);
      this.categoryBits = grown;
    }
    this.categoryBits[at] = bit;
  }

  private restoreCache(): void {
    if (this.previousCacheKib !== null && this.previousCacheKib < IMPORT_CACHE_KIB) this.sql.setCacheKib(this.previousCacheKib);
    this.previousCacheKib = null;
  }

  /** The scorer on each distinct address: what live reports do. */
  private rescoreEach(rescore: Rescore, onAddress?: (done: number) => void): void {
    // rescoreAll reads a chunk's reports in one statement instead of one per address.
    let chunk: RescoreOf[] = [];
    const flush = () => {
      const records = this.deps.scorer.rescoreAll(chunk);
      chunk.forEach(({ ip }, i) => {
        rescore.changes?.set(ip, records[i]!);
        onAddress?.(++rescore.done);
      });
      chunk = [];
    };
    for (const { ip } of this.sql.addressesAfter.iterate(this.lastOldId)) {
      chunk.push({ ip: parseIp(ip), nowMs: this.now });
      if (chunk.length === RESCORE_CHUNK) flush();
    }
    if (chunk.length > 0) flush();
  }

  /**
   * One walk of the address index, in batches of the addresses that hold an imported report, each with the
   * reports the scorer's SELECT would return (pending or verified, not older than the retention cutoff: see
   * store/reports.ts countingReportsSql). The older reports of a touched address are looked up by id.
   */
  private *addressBatches(): Generator<{ batch: AddressBatch; ips: string[] }> {
    const { now, params, lastOldId, firstNewId, categoryBits, severity } = this;
    const { reportsByAddress, reportById } = this.sql;
    const reporterId = this.options.reporterId;
    const listingsOf = this.deps.scorer.listingsOf;
    const builder = new AddressBatchBuilder(now, params);
    let ip: string | null = null;
    let touched = false;
    let olderIds: number[] = [];
    const endAddress = () => {
      if (ip === null) return;
      if (!touched) return;
      for (const id of olderIds) {
        const old = reportById.get(id)!;
        if (old.status !== "pending" && old.status !== "verified") continue;
        builder.addReport(id, old.reporterId, old.severity, old.createdAtMs, old.status === "verified", categoryBit(old.category as Category));
      }
      if (listingsOf) {
        const listed = listingsOf(parseIp(ip));
        if (listed.length > 0) builder.addListings(listed);
      }
      builder.endAddress(ip);
    };
    for (const row of reportsByAddress.iterate(retentionCutoffMs(now, params))) {
      if (row.ip !== ip) {
        endAddress();
        if (builder.addresses >= (this.options.addressesPerBatch ?? BATCH_ADDRESSES)) yield builder.take();
        ip = row.ip;
        touched = false;
        olderIds = [];
      }
      if (row.id > lastOldId) {
        touched = true;
        builder.addReport(row.id, reporterId, severity, row.createdAtMs, false, categoryBits[row.id - firstNewId]);
      } else {
        olderIds.push(row.id);
      }
    }
    endAddress();
    if (builder.addresses > 0) yield builder.take();
  }

  /** A scored batch's rows written (or deleted) as AddressScorer.rescore writes them, and its changes noted. */
  private writeScored(ips: string[], v: ScoredAddressBatch, rescore: Rescore, onAddress?: (done: number) => void): void {
    const { logAddressChanges } = this.sql;
    const { upsert: upsertAddress, remove: removeAddress } = this.addressRows;
    const orNull = (x: number) => (Number.isNaN(x) ? null : x);
    ips.forEach((ip, i) => {
      const at = i * SCORED_FIELDS;
      const total = v[at + 1];
      const bit = v[at + 4];
      // An address of many reports is left summed, as a live report would leave it (scorer.ts).
      if (total > 0) this.deps.scorer.sumIfMany?.(ip, this.now, total);
      if (total === 0) removeAddress.run(ip);
      else upsertAddress.run(ip, ip.includes(":") ? 6 : 4, v[at], total, v[at + 2], v[at + 3], bit < 0 ? null : CATEGORIES[bit], orNull(v[at + 5]), orNull(v[at + 6]), this.now, orNull(v[at + 7]));
      if (rescore.changes) {
        // recordOfScore's record (services/reports/scorer.ts) from the same figures.
        const record = total === 0 ? null : { reputationScore: v[at], totalReports: total, verifiedReports: v[at + 2], categoriesMask: v[at + 3], lastCategoryBit: bit, firstSeenMs: v[at + 5], lastSeenMs: v[at + 6] };
        rescore.changes.set(parseIp(ip), record);
      }
      if (rescore.logsChanges && rescore.changed.push(ip) >= CHANGE_LOG_BATCH) {
        logAddressChanges(rescore.changed);
        rescore.changed = [];
      }
      onAddress?.(++rescore.done);
    });
  }
}

/** The state of the rescoring at the end of an import. */
interface Rescore {
  bulk: boolean;
  changes: AddressChanges | null;
  /** Indexes and triggers to create again before the commit. */
  toBuild: SavedIndex[];
  /** Whether the changes are logged here (the triggers of `addresses` dropped), and those not logged yet. */
  logsChanges: boolean;
  changed: string[];
  done: number;
}
