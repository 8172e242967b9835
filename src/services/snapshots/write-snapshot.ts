// The writing of a snapshot file from a store's file (contract section 8), with nothing of a running server in it:
// the scoring parameters, the enrichment's range tables, the signing key and the instance id are handed in, so
// the same code runs on the server's thread (`snapshot export`, an in-memory store) or on a worker thread of
// its own (the server's `snapshot` job: export-worker.ts), where no piece of it holds the server's event loop.

import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import type { KeyObject } from "node:crypto";
import { parseIp } from "../../domain/ip";
import { retentionCutoffMs, scoreReports, type ScoredReport, type ScoringParameters } from "../../domain/scoring";
import { ReputationIndex } from "../../index/reputation-index";
import { contentHashInSteps, HASH_STEP_ROWS, META, SNAPSHOT_FORMAT_VERSION } from "../../store/snapshot-format";
import { indexBlobs, indexLayout } from "./index-blobs";
import { scoredReportOf } from "../reports/scorer";
import { recordOfRow, type AddressRow } from "../../store/address-rows";
import { BATCH_ROWS, SnapshotWriter } from "../../store/snapshot-writer";
import { listingReports } from "../../domain/feeds";
import { inTurns, loopPace, nextTurn } from "../event-loop-turns";
import { ListedNetworks } from "../feeds/listed-networks";
import { putListingsInto } from "../feeds/listing-records";
import { keyIdOf, publicKeyOf, SIGNATURE_ALGORITHM, signHash } from "./signing";
import { VERSION } from "../../version";

export interface SnapshotCounts {
  addresses: number;
  allowlist: number;
  threats: number;
  feeds: number;
  networks: number;
  rangeTables: number;
}

export interface ExportResult {
  file: string;
  bytes: number;
  sha256: string;
  createdAt: string;
  sourceInstance: string;
  signed: boolean;
  keyId: string | null;
  counts: SnapshotCounts;
  durationMs: number;
  /** Where the time went (ms): copying rows, building the index blobs, enrichment tables, the hash. */
  phases: Record<"copy" | "index" | "tables" | "hash", number>;
}

/** What a snapshot file is written from; everything a worker thread can be sent. */
export interface SnapshotFileInput {
  /** The store's database file, attached read-only. */
  sourcePath: string;
  /** The temporary file to write; renamed to `out` when complete. */
  temporary: string;
  out: string;
  nowMs: number;
  scoring: ScoringParameters;
  rangeTables: readonly { name: string; bytes: Uint8Array }[];
  signKey: KeyObject | null;
  sourceInstance: string;
}

/** Writes the snapshot, fsyncs it and renames it to `out`; on failure removes the temporary file and throws. */
export async function writeSnapshotFile(input: SnapshotFileInput): Promise<ExportResult> {
  const started = performance.now();
  const { temporary, out, nowMs, scoring, signKey } = input;
  const keyId = signKey === null ? null : keyIdOf(publicKeyOf(signKey));
  const writer = new SnapshotWriter(temporary, input.sourcePath);
  let finished = false;
  try {
    writer.beginCopy();
    const phases = { copy: 0, index: 0, tables: 0, hash: 0 };
    let mark = performance.now();
    const lap = () => {
      const now = performance.now();
      const ms = Math.round(now - mark);
      mark = now;
      return ms;
    };
    const counts = await copyContent(writer, scoring, nowMs, () => (phases.copy = lap()));
    phases.index = lap();
    writer.finishCopy();
    phases.copy += lap();
    await nextTurn();

    // A table at a time with a turn between (16.6 MiB in all with the built-in data: one write held the loop).
    for (let position = 0; position < input.rangeTables.length; position++) {
      writer.insertRangeTable(position, input.rangeTables[position].name, input.rangeTables[position].bytes);
      await nextTurn();
    }
    counts.rangeTables = input.rangeTables.length;

    const createdAt = new Date(nowMs).toISOString();
    const meta: [string, string][] = [
      [META.formatVersion, String(SNAPSHOT_FORMAT_VERSION)],
      [META.productVersion, VERSION],
      [META.createdAt, createdAt],
      [META.createdAtMs, String(nowMs)],
      [META.sourceInstance, input.sourceInstance],
      [META.addressCount, String(counts.addresses)],
      [META.allowlistCount, String(counts.allowlist)],
      [META.threatCount, String(counts.threats)],
      [META.feedCount, String(counts.feeds)],
      [META.networkCount, String(counts.networks)],
      [META.rangeTableCount, String(counts.rangeTables)],
      [META.scoring, JSON.stringify(scoring)],
      [META.indexLayout, indexLayout()],
    ];
    if (keyId !== null) meta.push([META.signatureKeyId, keyId], [META.signatureAlgorithm, SIGNATURE_ALGORITHM]);
    writer.insertMeta(meta);
    phases.tables = lap();
    await nextTurn();

    const sha256 = await inTurns(contentHashInSteps(writer.db, loopPace(HASH_STEP_ROWS)));
    writer.insertMeta(signKey === null ? [[META.contentSha256, sha256]] : [[META.contentSha256, sha256], [META.signature, signHash(sha256, signKey)]]);
    writer.close();
    phases.hash = lap();
    const fd = openSync(temporary, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, out);
    finished = true;
    return {
      file: out,
      bytes: statSync(out).size,
      sha256,
      createdAt,
      sourceInstance: input.sourceInstance,
      signed: signKey !== null,
      keyId,
      counts,
      durationMs: Math.round(performance.now() - started),
      phases,
    };
  } finally {
    if (!finished) {
      writer.abandon();
      rmSync(temporary, { force: true });
    }
  }
}

/**
 * Copies, inside the open transaction, the addresses (in batches, yielding between them), the allowlist, threats
 * and feeds from `src` into the snapshot, then builds the index from the copied rows. An address whose oldest
 * counting report has passed retention at `nowMs` is rescored from its reports here, as a lookup on the server
 * would do at that moment (or dropped when nothing counts any more).
 */
async function copyContent(writer: SnapshotWriter, scoring: ScoringParameters, nowMs: number, rowsCopied: () => void): Promise<SnapshotCounts> {
  await writer.copyAddresses(nextTurn);
  const { allowlist, threats, feeds, networks } = writer.copyTables();
  const listings = writer.listings();
  const listed = ListedNetworks.load(listings.feeds, listings.entries);

  const cutoff = retentionCutoffMs(nowMs, scoring);
  const expired = writer.addressesFirstSeenBefore(cutoff);
  if (expired.length > 0) {
    const { countingReports, update, remove } = writer.rescorer();
    for (const row of expired) {
      const r = rescoreAt([...countingReports.all(row.ip, cutoff).map(scoredReportOf), ...listingReports(listed.listingsAround(parseIp(row.ip)))], row, nowMs, scoring);
      if (r === null) remove.run(row.ip);
      else update.run(r.score, r.total, r.verified, r.mask, r.lastCategory, r.firstSeen, r.lastSeen, r.scoredAt, r.ip);
    }
  }

  rowsCopied();
  const index = new ReputationIndex(scoring.riskThresholds);
  let addresses = 0;
  for (const row of writer.addressRows()) {
    index.upsert(parseIp(row.ip), recordOfRow(row));
    if (++addresses % BATCH_ROWS === 0) await nextTurn();
  }
  // Listed networks, and listed addresses nobody reported, answer offline as they do on the server.
  putListingsInto(index, listed, nowMs, scoring, writer.rowsAmong());
  writer.insertIndexBlobs(indexBlobs(index));
  return { addresses, allowlist, threats, feeds, networks, rangeTables: 0 };
}

/** The row as scoring gives it at `nowMs` from its counting reports; null when none counts any more. */
function rescoreAt(reports: ScoredReport[], row: AddressRow, nowMs: number, scoring: ScoringParameters): (AddressRow & { scoredAt: number }) | null {
  const score = scoreReports(reports, nowMs, scoring);
  if (score.totalReports === 0) return null;
  return {
    ...row,
    score: score.reputationScore,
    total: score.totalReports,
    verified: score.verifiedReports,
    mask: score.categoriesMask,
    lastCategory: score.lastCategory,
    firstSeen: score.firstSeenMs,
    lastSeen: score.lastSeenMs,
    scoredAt: nowMs,
  };
}
