// Scoring a batch of addresses for a large import, as plain numbers in typed arrays so the batch can go to a
// worker thread and back cheaply: the same functions as AddressScorer.rescore (scoreReports, nextRescoreDueMs),
// on the same reports, so the answers are the scorer's to the bit, whichever thread computes them.

import { CATEGORIES, categoryBit } from "../../domain/categories";
import { nextRescoreDueMs, scoreReports, type ScoredReport, type ScoringParameters, type Severity } from "../../domain/scoring";

/**
 * Addresses with their counting reports, numbers only (the addresses' texts stay with the sender): address i's
 * reports are at [starts[i], starts[i + 1]).
 */
export interface AddressBatch {
  nowMs: number;
  params: ScoringParameters;
  addresses: number;
  starts: Int32Array;
  ids: Float64Array;
  reporterIds: Float64Array;
  severities: Uint8Array;
  createdAtMs: Float64Array;
  /** 1 verified, 0 pending (only counting reports are in a batch). */
  verified: Uint8Array;
  categoryBits: Uint8Array;
  /**
   * The reports the feeds' listings count as, for the few addresses inside listed networks: [address i, its
   * listings], in address order.
   */
  listings: [address: number, reports: ScoredReport[]][];
}

/**
 * Per address SCORED_FIELDS numbers: reputationScore, totalReports, verifiedReports, categoriesMask,
 * lastCategory's bit (−1: none), firstSeenMs, lastSeenMs, rescore due (NaN: null). totalReports 0: nothing
 * counts, the address row is deleted.
 */
export type ScoredAddressBatch = Float64Array;

export const SCORED_FIELDS = 8;

export function scoreAddressBatch(batch: AddressBatch): ScoredAddressBatch {
  const { nowMs, params, addresses, starts } = batch;
  const values = new Float64Array(addresses * SCORED_FIELDS);
  let listed = 0;
  for (let i = 0; i < addresses; i++) {
    const reports: ScoredReport[] = [];
    if (listed < batch.listings.length && batch.listings[listed][0] === i) for (const r of batch.listings[listed++][1]) reports.push(r);
    for (let j = starts[i]; j < starts[i + 1]; j++) {
      reports.push({
        id: batch.ids[j],
        reporterId: batch.reporterIds[j],
        severity: batch.severities[j] as Severity,
        createdAtMs: batch.createdAtMs[j],
        status: batch.verified[j] === 1 ? "verified" : "pending",
        category: CATEGORIES[batch.categoryBits[j]],
      });
    }
    const score = scoreReports(reports, nowMs, params);
    const at = i * SCORED_FIELDS;
    values[at] = score.reputationScore;
    values[at + 1] = score.totalReports;
    values[at + 2] = score.verifiedReports;
    values[at + 3] = score.categoriesMask;
    values[at + 4] = score.lastCategory === null ? -1 : categoryBit(score.lastCategory);
    values[at + 5] = score.firstSeenMs ?? Number.NaN;
    values[at + 6] = score.lastSeenMs ?? Number.NaN;
    values[at + 7] = score.totalReports === 0 ? Number.NaN : (nextRescoreDueMs(reports, nowMs, params) ?? Number.NaN);
  }
  return values;
}

/** The batch's buffers, to transfer rather than copy. */
export function batchBuffers(batch: AddressBatch): ArrayBuffer[] {
  return [batch.starts, batch.ids, batch.reporterIds, batch.severities, batch.createdAtMs, batch.verified, batch.categoryBits].map((a) => a.buffer as ArrayBuffer);
}

/** Collects addresses and their reports into a batch. */
export class AddressBatchBuilder {
  private ips: string[] = [];
  private starts: number[] = [0];
  private ids: number[] = [];
  private reporterIds: number[] = [];
  private severities: number[] = [];
  private createdAtMs: number[] = [];
  private verified: number[] = [];
  private categoryBits: number[] = [];
  private listings: [number, ScoredReport[]][] = [];

  constructor(
    private readonly nowMs: number,
    private readonly params: ScoringParameters,
  ) {}

  get addresses(): number {
    return this.ips.length;
  }

  addReport(id: number, reporterId: number, severity: number, createdAtMs: number, verified: boolean, bit: number): void {
    this.ids.push(id);
    this.reporterIds.push(reporterId);
    this.severities.push(severity);
    this.createdAtMs.push(createdAtMs);
    this.verified.push(verified ? 1 : 0);
    this.categoryBits.push(bit);
  }

  /** The reports the feeds' listings count as, for the address whose reports are being added. */
  addListings(reports: ScoredReport[]): void {
    this.listings.push([this.ips.length, reports]);
  }

  /** Closes the address whose reports were added since the last call. */
  endAddress(ip: string): void {
    this.ips.push(ip);
    this.starts.push(this.ids.length);
  }

  /** The batch so far and its addresses' texts; the builder starts over. */
  take(): { batch: AddressBatch; ips: string[] } {
    const ips = this.ips;
    const batch: AddressBatch = {
      nowMs: this.nowMs,
      params: this.params,
      addresses: ips.length,
      starts: Int32Array.from(this.starts),
      ids: Float64Array.from(this.ids),
      reporterIds: Float64Array.from(this.reporterIds),
      severities: Uint8Array.from(this.severities),
      createdAtMs: Float64Array.from(this.createdAtMs),
      verified: Uint8Array.from(this.verified),
      categoryBits: Uint8Array.from(this.categoryBits),
      listings: this.listings,
    };
    this.ips = [];
    this.starts = [0];
    this.ids = [];
    this.reporterIds = [];
    this.severities = [];
    this.createdAtMs = [];
    this.verified = [];
    this.categoryBits = [];
    this.listings = [];
    return { batch, ips };
  }
}
