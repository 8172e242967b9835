// Snapshots (contract section 8): export one SQLite file holding what lookups and blocklists need, read its
// description, verify its content hash and Ed25519 signature. Opening a snapshot for use is snapshot-sources.ts.
//
// An export runs on a connection of its own to the new file, with the store ATTACHed to it (and only read): its
// one transaction is the one read transaction of the store, so while the server keeps writing (WAL) the export
// sees one consistent moment (write-snapshot.ts). The server's daily job writes it on a worker thread
// (export-in-worker.ts); `snapshot export` on its own thread. The file is written under a temporary name next to
// `out` and renamed when complete. It never holds users, passwords, API keys, webhooks, emails, report texts, allowlist
// notes or reporter ids: it is built table by table from the columns named here, never copied whole.

import type { Database } from "bun:sqlite";
import { randomBytes, type KeyObject } from "node:crypto";
import { existsSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { AppError } from "../../domain/errors";
import { DEFAULT_SCORING_PARAMETERS, type ScoringParameters } from "../../domain/scoring";
import type { Store } from "../../store/database";
import { type Enrichment, openEnrichment } from "../enrichment/enrichment";
import type { Services } from "../../services/services";
import { contentHash, META, readMeta, SNAPSHOT_FORMAT_VERSION } from "../../store/snapshot-format";
import { openSnapshotDatabase, snapshotIntegrityProblems } from "../../store/snapshot-file";
import { CACHE_KIB, copyStoreToFile, INSTANCE_ID_KEY, instanceIdOf } from "../../store/snapshot-writer";
import { generateKeyPair, keyIdOf, readPrivateKey, readPublicKey, verifyHashSignature } from "./signing";
import { type ExportResult, type SnapshotCounts, type SnapshotFileInput, writeSnapshotFile } from "./write-snapshot";
import { writeSnapshotInWorker } from "./export-in-worker";

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

export type { ExportResult, SnapshotCounts };

/** What an export is written from: the store's file (an in-memory store copied to one first), and what only the caller holds. */
function fileInput(options: ExportOptions, temporary: string): { input: SnapshotFileInput; copiedSource: string | null } {
  const { store, nowMs } = options;
  const scoring = options.services?.scoring ?? options.scoring ?? DEFAULT_SCORING_PARAMETERS;
  const enrichment = options.services?.enrichment ?? options.enrichment!;
  const signKey = typeof options.signKey === "string" ? readPrivateKey(options.signKey) : (options.signKey ?? null);
  // An in-memory store (tests) cannot be attached from another connection: it is copied to a file first.
  const memory = store.path === ":memory:" || store.path === "";
  const copiedSource = memory ? `${temporary}.source` : null;
  if (copiedSource !== null) copyStoreToFile(store, copiedSource);
  const rangeTables = enrichment.rangeTables().map((t) => ({ name: t.name, bytes: t.table.bytes }));
  return {
    input: { sourcePath: copiedSource ?? store.path, temporary, out: options.out, nowMs, scoring, rangeTables, signKey, sourceInstance: instanceIdOf(store) },
    copiedSource,
  };
}

/** The temporary name next to `out` that an export writes before renaming. */
function temporaryFor(out: string): string {
  if (!existsSync(dirname(out) || ".")) throw new AppError("bad_request", `the directory of ${out} does not exist`);
  return join(dirname(out), `.${basename(out)}.${randomBytes(6).toString("hex")}.tmp`);
}

/**
 * Exports a snapshot on this thread (write-snapshot.ts), yielding to the event loop between batches: `snapshot
 * export` and tests. `inWorker` writes it on a worker thread instead (a store on a file only; the server's job).
 */
export async function exportSnapshot(options: ExportOptions & { inWorker?: boolean }): Promise<ExportResult> {
  const temporary = temporaryFor(options.out);
  const enrichment = options.services?.enrichment ?? options.enrichment ?? (await openEnrichment({}));
  const { input, copiedSource } = fileInput({ ...options, enrichment }, temporary);
  try {
    return options.inWorker === true && copiedSource === null ? await writeSnapshotInWorker(input) : await writeSnapshotFile(input);
  } finally {
    rmSync(temporary, { force: true });
    if (copiedSource !== null) rmSync(copiedSource, { force: true });
  }
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
  // On a worker thread: at 1 M addresses an export on the server's thread held it up to 2.4 s at a time (issue 29).
  return (outPath) => exportSnapshot({ store: services.store, services, out: outPath, nowMs: services.clock.now(), signKey: key ?? undefined, inWorker: true });
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
