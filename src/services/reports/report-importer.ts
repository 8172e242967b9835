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
import { parseIp, type Ip } from "../../domain/ip";
import {
  DEFAULT_SCORING_PARAMETERS,
  nextRescoreDueMs,
  type ReportStatus,
  retentionCutoffMs,
  scoreReports,
  type ScoredReport,
  type ScoringParameters,
  type Severity,
} from "../../domain/scoring";
import type { Store } from "../../store/database";
import { ADDRESS_INDEX, reportImportStatements, type SavedIndex } from "../../store/report-import";
import { importStatements } from "../../store/reports";
import { AddressChanges, type AddressChangePublisher } from "../changes/address-changes";
import type { ImportRow } from "./import-csv";
import { type AddressScorer, recordOfScore } from "./scorer";

export interface ImportSummary {
  rows: number;
  reports: number;
  addresses: number;
}

export interface ImportDeps {
  store: Store;
  /** Rescoring of a small import; its parameters must be `params`. */
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
}

const MIN_BULK_REPORTS = 50_000;
/** The page cache while a (small) import inserts into the indexes of `reports`: fewer of their pages reread. */
const IMPORT_CACHE_KIB = 32 * 1024;
const CHANGE_LOG_BATCH = 10_000;

export class ReportImporter {
  private readonly now: number;
  private readonly severity: Severity;
  private readonly params: ScoringParameters;
  private readonly statements;
  private readonly sql;
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

  constructor(
    private readonly deps: ImportDeps,
    private readonly options: ReportImporterOptions,
  ) {
    this.now = Math.trunc(options.nowMs);
    this.severity = options.severity ?? 3;
    this.params = deps.params ?? DEFAULT_SCORING_PARAMETERS;
    this.statements = importStatements(deps.store.sqlite);
    this.sql = reportImportStatements(deps.store.sqlite);
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
    const { insertReport } = this.statements;
    const { reporterId } = this.options;
    for (const row of rows) {
      for (const category of row.categories) {
        const id = Number(insertReport.run(row.ip.text, row.ip.version, reporterId, category, this.severity, row.comment, row.reportedAtMs, this.now).lastInsertRowid);
        this.noteCategory(id, category);
      }
      this.reports += row.categories.length;
      if (this.droppedIndexes === null && this.reports >= this.bulkFrom) {
        this.droppedIndexes = this.sql.dropReportIndexes();
        // Appends and sorts from here on: a large cache only makes SQLite's sorts hold more memory, not run faster.
        this.restoreCache();
      }
    }
    this.rows += rows.length;
  }

  /**
   * Writes the first transitions, rescores the touched addresses (`onAddress(n)` after each), builds the dropped
   * indexes again (`onIndex(built, of)`), commits, and publishes the changes.
   */
  finish(onAddress?: (done: number) => void, onIndex?: (built: number, of: number) => void): ImportSummary {
    this.sql.insertTransitionsAfter.run(this.lastOldId, this.now, this.options.reporterId);
    const changes = this.deps.changes ? new AddressChanges() : null;
    let addresses: number;
    let toBuild: SavedIndex[] = [];
    if (this.droppedIndexes === null) {
      addresses = this.rescoreEach(changes, onAddress);
    } else {
      const addressIndex = this.droppedIndexes.find((index) => index.name === ADDRESS_INDEX);
      if (!addressIndex) throw new Error(`the index ${ADDRESS_INDEX} of reports is missing`);
      this.sql.restore(addressIndex);
      // With fewer addresses stored than reports imported, their indexes are built again afterwards too.
      const addressObjects = this.sql.addressCount() <= this.reports ? this.sql.dropAddressIndexesAndTriggers() : [];
      addresses = this.rescoreFromAddressIndex(changes, addressObjects.length > 0, onAddress);
      toBuild = [...this.droppedIndexes.filter((index) => index !== addressIndex), ...addressObjects];
    }
    toBuild.forEach((index, i) => {
      this.sql.restore(index);
      onIndex?.(i + 1, toBuild.length);
    });
    this.sql.commit();
    this.restoreCache();
    if (changes) this.deps.changes?.publish(changes);
    return { rows: this.rows, reports: this.reports, addresses };
  }

  /** Rolls everything back (the dropped indexes come back with it). */
  abort(): void {
    this.sql.rollback();
    this.restoreCache();
  }

  private noteCategory(id: number, category: Category): void {
    if (this.firstNewId === 0) this.firstNewId = id;
    const at = id - this.firstNewId;
    if (at >= this.categoryBits.length) {
      const grown = new Uint8Array(Math.max(at + 1, this.categoryBits.length * 2));
      grown.set(this.categoryBits);
      this.categoryBits = grown;
    }
    this.categoryBits[at] = categoryBit(category);
  }

  private restoreCache(): void {
    if (this.previousCacheKib !== null && this.previousCacheKib < IMPORT_CACHE_KIB) this.sql.setCacheKib(this.previousCacheKib);
    this.previousCacheKib = null;
  }

  /** The scorer on each distinct address: what live reports do. */
  private rescoreEach(changes: AddressChanges | null, onAddress?: (done: number) => void): number {
    let done = 0;
    for (const { ip: text } of this.sql.addressesAfter.iterate(this.lastOldId)) {
      const ip = parseIp(text);
      const record = this.deps.scorer.rescore(ip, this.now);
      changes?.set(ip, record);
      onAddress?.(++done);
    }
    return done;
  }

  /**
   * One walk of the address index: each address's reports not older than the retention cutoff, the ones the
   * scorer's SELECT returns (pending or verified, store/reports.ts countingReportsSql), scored and written as
   * AddressScorer.rescore does for each address that holds an imported report. `logsChanges`: the triggers of
   * `addresses` are dropped, so the changes are logged here, in batches.
   */
  private rescoreFromAddressIndex(changes: AddressChanges | null, logsChanges: boolean, onAddress?: (done: number) => void): number {
    const { now, params, lastOldId, firstNewId, categoryBits } = this;
    const { reportsByAddress, reportById, upsertAddress, removeAddress, logAddressChanges } = this.sql;
    const reporterId = this.options.reporterId;
    const severity = this.severity;
    const changed: string[] = [];
    let done = 0;
    let ip: string | null = null;
    let touched = false;
    let reports: ScoredReport[] = [];
    /** The older reports of the address, looked up only if the address is touched. */
    let olderIds: number[] = [];
    const flush = () => {
      if (ip === null || !touched) return;
      for (const id of olderIds) {
        const old = reportById.get(id)!;
        if (old.status !== "pending" && old.status !== "verified") continue;
        reports.push({ id, reporterId: old.reporterId, severity: old.severity as Severity, createdAtMs: old.createdAtMs, status: old.status as ReportStatus, category: old.category as Category });
      }
      const score = scoreReports(reports, now, params);
      const record = recordOfScore(score);
      if (record === null) removeAddress.run(ip);
      else {
        upsertAddress.run(ip, ip.includes(":") ? 6 : 4, score.reputationScore, score.totalReports, score.verifiedReports, score.categoriesMask,
          score.lastCategory, score.firstSeenMs, score.lastSeenMs, now, nextRescoreDueMs(reports, now, params));
      }
      changes?.set(parseIp(ip) as Ip, record);
      if (logsChanges && changed.push(ip) >= CHANGE_LOG_BATCH) {
        logAddressChanges(changed);
        changed.length = 0;
      }
      onAddress?.(++done);
    };
    for (const row of reportsByAddress.iterate(retentionCutoffMs(now, params))) {
      if (row.ip !== ip) {
        flush();
        ip = row.ip;
        touched = false;
        reports = [];
        olderIds = [];
      }
      if (row.id > lastOldId) {
        touched = true;
        reports.push({ id: row.id, reporterId, severity, createdAtMs: row.createdAtMs, status: "pending", category: CATEGORIES[categoryBits[row.id - firstNewId]] });
      } else {
        olderIds.push(row.id);
      }
    }
    flush();
    if (changed.length > 0) logAddressChanges(changed);
    return done;
  }
}
