// Snapshots (contract section 8): export one SQLite file holding what lookups and blocklists need, read its
// description, verify its content hash and Ed25519 signature. Opening a snapshot for use is snapshot-sources.ts.
//
// An export runs on a connection of its own to the new file, with the store ATTACHed to it (and only read): its
// one transaction is the one read transaction of the store, so while the server keeps writing (WAL) the export
// sees one consistent moment. Rows are copied by SQLite in batches, yielding to the event loop between them so a
// server running the daily job keeps answering. The file is written under a temporary name next to `out` and
// renamed when complete. It never holds users, passwords, API keys, webhooks, emails, report texts, allowlist
// notes or reporter ids: it is built table by table from the columns named here, never copied whole.

import type { Database } from "bun:sqlite";
import { randomBytes, type KeyObject } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { AppError } from "../../domain/errors";
import { parseIp } from "../../domain/ip";
import {
  DEFAULT_SCORING_PARAMETERS,
  retentionCutoffMs,
  scoreReports,
  type ScoredReport,
  type ScoringParameters,
} from "../../domain/scoring";
import { ReputationIndex } from "../../index/reputation-index";
import type { Store } from "../../store/database";
import { VERSION } from "../../version";
import { type Enrichment, openEnrichment } from "../enrichment/enrichment";
import type { Services } from "../../services/services";
import { contentHash, contentHashInSteps, HASH_STEP_ROWS, META, readMeta, SNAPSHOT_FORMAT_VERSION } from "../../store/snapshot-format";
import { indexBlobs, indexLayout } from "./index-blobs";
import { scoredReportOf } from "../reports/scorer";
import { recordOfRow, type AddressRow } from "../../store/address-rows";
import { openSnapshotDatabase, snapshotIntegrityProblems } from "../../store/snapshot-file";
import { BATCH_ROWS, CACHE_KIB, copyStoreToFile, INSTANCE_ID_KEY, instanceIdOf, SnapshotWriter } from "../../store/snapshot-writer";
import { listingReports } from "../../domain/feeds";
import { inTurns, nextTurn } from "../event-loop-turns";
import { Pace } from "../../domain/pace";
import { ListedNetworks } from "../feeds/listed-networks";
import { putListingsInto } from "../feeds/listing-records";
import {
  generateKeyPair,
  keyIdOf,
  publicKeyOf,
  readPrivateKey,
  readPublicKey,
  SIGNATURE_ALGORITHM,
  signHash,
  verifyHashSignature,
} from "./signing";

export { generateKeyPair };

export { INSTANCE_ID_KEY, instanceIdOf };

export interface ExportOptions {
  store: Store;
  /** A running instance: its enrichment tables and scoring parameters are used. */
  services?: Pick<Services, "enrichment" | "scoring">;
  /** Without `services`: the enrichment whose range tables go in (default: the built-in table only). */
  enrichment?: Enrichment;
  /** Without `services`: the scoring parameters in force (default: the contract's). */
  scoring?: ScoringParameters;
  out: string;
  /** A private key file (PEM or base64, see snapshot-signing.ts) or a loaded key. */
  signKey?: string | KeyObject;
  /** The snapshot's moment: retention is applied as of this time, and it is the recorded creation time. */
  nowMs: number;
}

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


export async function exportSnapshot(options: ExportOptions): Promise<ExportResult> {
  const started = performance.now();
  const { store, nowMs } = options;
  const scoring = options.services?.scoring ?? options.scoring ?? DEFAULT_SCORING_PARAMETERS;
  const enrichment = options.services?.enrichment ?? options.enrichment ?? (await openEnrichment({}));
  const signKey = typeof options.signKey === "string" ? readPrivateKey(options.signKey) : (options.signKey ?? null);
  const keyId = signKey === null ? null : keyIdOf(publicKeyOf(signKey));
  const sourceInstance = instanceIdOf(store);

  const out = options.out;
  if (!existsSync(dirname(out) || ".")) throw new AppError("bad_request", `the directory of ${out} does not exist`);
  const temporary = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString("hex")}.tmp`);
  // An in-memory store (tests) cannot be attached from another connection: it is copied to a file first.
  const memory = store.path === ":memory:" || store.path === "";
  const source = memory ? `${temporary}.source` : store.path;
  if (memory) copyStoreToFile(store, source);

  const writer = new SnapshotWriter(temporary, source);
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

    const tables = enrichment.rangeTables();
    // A table at a time with a turn between (16.6 MiB in all with the built-in data: one write held the loop).
    for (let position = 0; position < tables.length; position++) {
      writer.insertRangeTable(position, tables[position].name, tables[position].table.bytes);
      await nextTurn();
    }
    counts.rangeTables = tables.length;

    const createdAt = new Date(nowMs).toISOString();
    const meta: [string, string][] = [
      [META.formatVersion, String(SNAPSHOT_FORMAT_VERSION)],
      [META.productVersion, VERSION],
      [META.createdAt, createdAt],
      [META.createdAtMs, String(nowMs)],
      [META.sourceInstance, sourceInstance],
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

    const sha256 = await inTurns(contentHashInSteps(writer.db, new Pace(HASH_STEP_ROWS)));
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
      sourceInstance,
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
    if (memory) rmSync(source, { force: true });
  }
}

/**
 * Copies, inside the open transaction, the addresses (in batches, yielding between them so a server keeps
 * answering), the allowlist, threats and feeds from `src` into the snapshot, then builds the index from the
 * copied rows. An address whose oldest counting report has passed retention at `nowMs` is rescored from its
 * reports here, as a lookup on the server would do at that moment (or dropped when nothing counts any more).
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

// ---------------------------------------------------------------------------------------------------------
// The `snapshot` job's side: a file per run under <data-dir>/snapshots/ (src/jobs/snapshot.ts names and prunes).

/** The exporter the `snapshot` job calls with the path to write (src/jobs/snapshot.ts names and prunes). */
export function snapshotExporter(
  services: Pick<Services, "store" | "enrichment" | "scoring" | "clock">,
  signKey: string | null = null,
): (outPath: string) => Promise<ExportResult> {
  // Read once, so a bad key file stops the server at start rather than the job at 03:00.
  const key = signKey === null ? null : readPrivateKey(signKey);
  return (outPath) => exportSnapshot({ store: services.store, services, out: outPath, nowMs: services.clock.now(), signKey: key ?? undefined });
}

// ---------------------------------------------------------------------------------------------------------
// Reading a snapshot's description, and verifying it.

export interface SnapshotInfo {
  file: string;
  bytes: number;
  formatVersion: number;
  productVersion: string | null;
  createdAt: string;
  createdAtMs: number;
  sourceInstance: string;
  counts: SnapshotCounts;
  scoring: ScoringParameters | null;
  sha256: string | null;
  signed: boolean;
  signatureKeyId: string | null;
}

export function infoFromMeta(file: string, meta: Map<string, string>): SnapshotInfo {
  const formatVersion = Number(meta.get(META.formatVersion));
  if (!Number.isInteger(formatVersion)) throw new AppError("bad_request", `${file} is not an abuse-intel snapshot (no format version)`);
  const count = (key: string) => Number(meta.get(key) ?? 0);
  let scoring: ScoringParameters | null = null;
  try {
    scoring = JSON.parse(meta.get(META.scoring) ?? "null");
  } catch {
    scoring = null;
  }
  const createdAtMs = Number(meta.get(META.createdAtMs));
  return {
    file,
    bytes: existsSync(file) ? statSync(file).size : 0,
    formatVersion,
    productVersion: meta.get(META.productVersion) ?? null,
    createdAt: meta.get(META.createdAt) ?? new Date(createdAtMs).toISOString(),
    createdAtMs,
    sourceInstance: meta.get(META.sourceInstance) ?? "unknown",
    counts: {
      addresses: count(META.addressCount),
      allowlist: count(META.allowlistCount),
      threats: count(META.threatCount),
      feeds: count(META.feedCount),
      networks: count(META.networkCount),
      rangeTables: count(META.rangeTableCount),
    },
    scoring,
    sha256: meta.get(META.contentSha256) ?? null,
    signed: meta.has(META.signature),
    signatureKeyId: meta.get(META.signatureKeyId) ?? null,
  };
}

/** What `snapshot info` shows: the meta table, read without checking the content (see verifySnapshot). */
export function snapshotInfo(file: string): SnapshotInfo {
  const db = openSnapshotDatabase(file);
  try {
    return infoFromMeta(file, readMeta(db));
  } finally {
    db.close();
  }
}

export interface VerifyResult {
  ok: boolean;
  /** Why it failed; empty when ok. */
  problems: string[];
  /** The hash recorded in the file, and the one computed from its content now. */
  recordedSha256: string | null;
  computedSha256: string | null;
  signed: boolean;
  /** True or false when a public key was given and the file is signed; null when not checked. */
  signatureValid: boolean | null;
  signatureKeyId: string | null;
}

/**
 * Recomputes the content hash (any change of content fails it) and, with a public key, checks the signature:
 * an unsigned snapshot or one signed by another key fails. SQLite's integrity check runs first (structure, and
 * every index against its table), so a damaged file fails with SQLite's reason.
 */
export function verifySnapshot(file: string, publicKey?: string | KeyObject): VerifyResult {
  const result: VerifyResult = { ok: false, problems: [], recordedSha256: null, computedSha256: null, signed: false, signatureValid: null, signatureKeyId: null };
  const key = typeof publicKey === "string" ? readPublicKey(publicKey) : (publicKey ?? null);
  let db: Database;
  try {
    db = openSnapshotDatabase(file);
  } catch (error) {
    result.problems.push((error as Error).message);
    return result;
  }
  try {
    // The full check (not quick_check): it also proves every index matches its table, and the indexes are
    // not in the content hash.
    const check = snapshotIntegrityProblems(db, CACHE_KIB);
    if (check.length > 0) {
      result.problems.push(`the SQLite file is damaged: ${check.slice(0, 3).join("; ")}`);
      return result;
    }
    const meta = readMeta(db);
    result.recordedSha256 = meta.get(META.contentSha256) ?? null;
    result.signed = meta.has(META.signature);
    result.signatureKeyId = meta.get(META.signatureKeyId) ?? null;
    const version = Number(meta.get(META.formatVersion));
    if (version !== SNAPSHOT_FORMAT_VERSION) {
      result.problems.push(`format version ${meta.get(META.formatVersion) ?? "(none)"} is not supported (this build reads ${SNAPSHOT_FORMAT_VERSION})`);
      return result;
    }
    result.computedSha256 = contentHash(db);
    if (result.recordedSha256 === null) result.problems.push("the snapshot records no content hash");
    else if (result.recordedSha256 !== result.computedSha256) {
      result.problems.push(`the content does not match its hash: recorded ${result.recordedSha256}, computed ${result.computedSha256}`);
    }
    if (key !== null) {
      if (!result.signed) {
        result.problems.push("the snapshot is not signed, but a public key was given");
      } else {
        result.signatureValid = result.recordedSha256 !== null && verifyHashSignature(result.recordedSha256, meta.get(META.signature)!, key);
        if (!result.signatureValid) {
          const id = keyIdOf(key);
          result.problems.push(
            result.signatureKeyId !== null && result.signatureKeyId !== id
              ? `the signature does not match the public key (signed by key ${result.signatureKeyId}, the given key is ${id})`
              : "the signature does not match the public key",
          );
        }
      }
    }
  } catch (error) {
    result.problems.push(`cannot read the snapshot: ${(error as Error).message}`);
  } finally {
    db.close();
  }
  result.ok = result.problems.length === 0;
  return result;
}
