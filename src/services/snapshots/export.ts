// Snapshots (contract section 8): export one SQLite file holding what lookups and blocklists need, read its
// description, verify its content hash and Ed25519 signature. Opening a snapshot for use is snapshot-sources.ts.
//
// An export runs on a connection of its own to the new file, with the store ATTACHed to it (and only read): its
// one transaction is the one read transaction of the store, so while the server keeps writing (WAL) the export
// sees one consistent moment. Rows are copied by SQLite in batches, yielding to the event loop between them so a
// server running the daily job keeps answering. The file is written under a temporary name next to `out` and
// renamed when complete. It never holds users, passwords, API keys, webhooks, emails, report texts, allowlist
// notes or reporter ids: it is built table by table from the columns named here, never copied whole.

import { Database } from "bun:sqlite";
import { randomBytes, randomUUID, type KeyObject } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
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
import { contentHash, META, readMeta, SNAPSHOT_FORMAT_VERSION, SNAPSHOT_INDEXES, SNAPSHOT_SCHEMA } from "./format";
import { indexBlobs, indexLayout } from "./index-blobs";
import { countingReportsSql, scoredReportOf, type CountingReportRow } from "../reports/scorer";
import { ADDRESS_ROW_COLUMNS, recordOfRow, type AddressRow } from "../../store/address-rows";
import { readListings } from "../../store/feeds";
import { listingReports } from "../../domain/feeds";
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

/** Rows copied between two yields to the event loop. */
const BATCH_ROWS = 25_000;
/** Page cache of the export's connection, per database (KiB): the tables being built stay in memory. */
const CACHE_KIB = 256 * 1024;
/** Big pages: the index and range-table blobs are read in fewer, larger steps at start. */
const PAGE_SIZE = 65_536;
export const INSTANCE_ID_KEY = "instance_id";

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

/** The random id of this installation, created in the main database's `meta` table on first use. */
export function instanceIdOf(store: Store): string {
  try {
    store.sqlite.query("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)").run(INSTANCE_ID_KEY, randomUUID());
  } catch {
    // A read-only store: an id written earlier is still read below.
  }
  const row = store.sqlite.query("SELECT value FROM meta WHERE key = ?").get(INSTANCE_ID_KEY) as { value: string } | null;
  return row?.value ?? "unknown";
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));


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
  if (memory) store.sqlite.query("VACUUM INTO ?").run(source);

  // The snapshot file's own connection; the store is attached to it as `src` and only ever read. Its BEGIN is
  // the one read transaction: every statement until COMMIT sees the store as it was at the first read.
  const db = new Database(temporary, { create: true, readwrite: true });
  let finished = false;
  try {
    db.exec(`PRAGMA main.page_size = ${PAGE_SIZE}`);
    db.exec("PRAGMA main.journal_mode = OFF");
    db.exec("PRAGMA main.synchronous = OFF");
    db.exec(`PRAGMA main.cache_size = ${-CACHE_KIB}`);
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec(SNAPSHOT_SCHEMA);
    db.query("ATTACH DATABASE ? AS src").run(source);
    db.exec(`PRAGMA src.cache_size = ${-CACHE_KIB}`);
    db.exec("BEGIN");
    const phases = { copy: 0, index: 0, tables: 0, hash: 0 };
    let mark = performance.now();
    const lap = () => {
      const now = performance.now();
      const ms = Math.round(now - mark);
      mark = now;
      return ms;
    };
    const counts = await copyContent(db, scoring, nowMs, () => (phases.copy = lap()));
    phases.index = lap();
    db.exec(SNAPSHOT_INDEXES);
    db.exec("COMMIT");
    db.exec("DETACH DATABASE src");
    phases.copy += lap();
    await tick();

    const tables = enrichment.rangeTables();
    const insertTable = db.prepare("INSERT INTO range_tables (position, name, bytes) VALUES (?, ?, ?)");
    tables.forEach(({ name, table }, position) => insertTable.run(position, name, table.bytes));
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
    const insertMeta = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    for (const [key, value] of meta) insertMeta.run(key, value);
    phases.tables = lap();
    await tick();

    const sha256 = contentHash(db);
    insertMeta.run(META.contentSha256, sha256);
    if (signKey !== null) insertMeta.run(META.signature, signHash(sha256, signKey));
    db.close();
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
      try {
        if (db.inTransaction) db.exec("ROLLBACK");
        db.close();
      } catch {
        // already closed
      }
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
async function copyContent(db: Database, scoring: ScoringParameters, nowMs: number, rowsCopied: () => void): Promise<SnapshotCounts> {
  const batchEnd = db.prepare<{ last: number | null }, [number]>(
    `SELECT max(rowid) AS last FROM (SELECT rowid FROM src.addresses WHERE rowid > ? ORDER BY rowid LIMIT ${BATCH_ROWS})`,
  );
  const copyBatch = db.prepare(
    `INSERT INTO main.addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
                                 first_seen, last_seen, scored_at)
     SELECT ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
            first_seen, last_seen, scored_at
       FROM src.addresses WHERE rowid > ? AND rowid <= ?`,
  );
  for (let after = 0; ; ) {
    const last = batchEnd.get(after)?.last ?? null;
    if (last === null) break;
    copyBatch.run(after, last);
    after = last;
    await tick();
  }

  const copy = (columns: string, table: string, order: string) => db.prepare(`INSERT INTO main.${table} (${columns}) SELECT ${columns} FROM src.${table} ORDER BY ${order}`).run().changes;
  // Allowlist notes and authors are left out: free text and user ids have no place in a file that travels.
  const allowlist = copy("id, cidr, created_at", "allowlist", "id");
  const threats = copy("id, kind, pattern_key, cidr, asn, category, ip_count, addresses, window_start, window_end, detected_at", "threats", "id");
  const feeds = copy("name, category, severity, entry_count, updated_at", "feeds", "name");
  const networks = copy("feed_name, cidr, ip_version, prefix_length, created_at", "feed_entries", "feed_name, cidr");
  const listings = readListings(db);
  const listed = ListedNetworks.load(listings.feeds, listings.entries);

  const cutoff = retentionCutoffMs(nowMs, scoring);
  const expired = db.prepare<AddressRow, [number]>(`SELECT ${ADDRESS_ROW_COLUMNS} FROM main.addresses WHERE first_seen < ?`).all(cutoff);
  if (expired.length > 0) {
    const reportsOf = db.prepare<CountingReportRow, [string, number]>(countingReportsSql("src.reports"));
    const update = db.prepare(
      `UPDATE main.addresses SET reputation_score = ?, total_reports = ?, verified_reports = ?, categories_mask = ?, last_category = ?,
                                 first_seen = ?, last_seen = ?, scored_at = ? WHERE ip = ?`,
    );
    const remove = db.prepare("DELETE FROM main.addresses WHERE ip = ?");
    for (const row of expired) {
      const r = rescoreAt([...reportsOf.all(row.ip, cutoff).map(scoredReportOf), ...listingReports(listed.listingsAround(parseIp(row.ip)))], row, nowMs, scoring);
      if (r === null) remove.run(row.ip);
      else update.run(r.score, r.total, r.verified, r.mask, r.lastCategory, r.firstSeen, r.lastSeen, r.scoredAt, r.ip);
    }
  }

  rowsCopied();
  const index = new ReputationIndex(scoring.riskThresholds);
  let addresses = 0;
  for (const row of db.query(`SELECT ${ADDRESS_ROW_COLUMNS} FROM main.addresses ORDER BY ip`).iterate() as IterableIterator<AddressRow>) {
    index.upsert(parseIp(row.ip), recordOfRow(row));
    if (++addresses % BATCH_ROWS === 0) await tick();
  }
  // Listed networks, and listed addresses nobody reported, answer offline as they do on the server.
  const hasRow = db.prepare<{ one: number }, [string]>("SELECT 1 AS one FROM main.addresses WHERE ip = ?");
  putListingsInto(index, listed, nowMs, scoring, (ip) => hasRow.get(ip) !== null);

  const insertBlob = db.prepare("INSERT INTO main.index_data (position, name, type, bytes) VALUES (?, ?, ?, ?)");
  indexBlobs(index).forEach((blob, position) => insertBlob.run(position, blob.name, blob.type, blob.bytes));
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
// The `snapshot` job's side: a file per run under <data-dir>/snapshots/, the newest `keep` kept.

export const SNAPSHOT_DIRECTORY = "snapshots";
const JOB_FILE = /^abuse-intel-\d{8}T\d{6}(?:\d{3})?Z\.sqlite$/;

/** The exporter the `snapshot` job calls with the path to write (src/jobs/snapshot.ts names and prunes). */
export function snapshotExporter(services: Pick<Services, "store" | "enrichment" | "scoring" | "clock">): (outPath: string) => Promise<ExportResult> {
  return (outPath) => exportSnapshot({ store: services.store, services, out: outPath, nowMs: services.clock.now() });
}

/** Writes `<dataDir>/snapshots/abuse-intel-<time>.sqlite` and deletes all but the newest `keep` such files. */
export async function exportToSnapshotDir(
  services: Pick<Services, "store" | "enrichment" | "scoring">,
  dataDir: string,
  nowMs: number,
  keep = 7,
): Promise<ExportResult & { removed: string[] }> {
  const directory = join(dataDir, SNAPSHOT_DIRECTORY);
  mkdirSync(directory, { recursive: true });
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, "").replace(/\.(\d{3})Z$/, (_, ms: string) => (ms === "000" ? "Z" : `${ms}Z`));
  const result = await exportSnapshot({ store: services.store, services, out: join(directory, `abuse-intel-${stamp}.sqlite`), nowMs });
  const ours = readdirSync(directory).filter((name) => JOB_FILE.test(name)).sort().reverse();
  const removed = ours.slice(Math.max(1, keep));
  for (const name of removed) rmSync(join(directory, name), { force: true });
  return { ...result, removed };
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

/** Opens a file as a snapshot (read-only), or fails saying why it is not one. */
export function openSnapshotDatabase(file: string): Database {
  if (!existsSync(file)) throw new AppError("not_found", `${file} does not exist`);
  let db: Database;
  try {
    db = new Database(file, { readonly: true });
    db.query("SELECT 1 FROM meta LIMIT 1").get();
  } catch (error) {
    throw new AppError("bad_request", `${file} is not an abuse-intel snapshot: ${(error as Error).message}`);
  }
  return db;
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
    // not in the content hash. A big page cache keeps it to about a second per million addresses.
    db.exec(`PRAGMA cache_size = ${-CACHE_KIB}`);
    const check = (db.query("PRAGMA integrity_check").all() as Record<string, string>[]).map((r) => Object.values(r)[0]);
    if (check.length !== 1 || check[0] !== "ok") {
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
