// The snapshot file (contract section 8): its SQLite schema, the keys of its `meta` table, and the content hash
// computed over a canonical serialization of everything in it, so that verification catches any change of content.
//
// Canonical serialization (format version 1), fed to SHA-256 in this order:
//   "abuse-intel-snapshot\0" then the format version as a value;
//   the schema: every row of sqlite_master (type, name, tbl_name, sql) ordered by type, name;
//   every table ordered by name: its name, column names, then each row ordered by the primary key (the `meta`
//   table without the content_sha256 and signature rows), then the row count.
// A value is a tag byte and its bytes: 0 NULL; 1 a number as float64 little-endian; 2 text as a uint32
// little-endian byte length and UTF-8; 3 a blob as a uint32 length and the bytes. So a changed byte, a changed
// type, a moved value, an added or removed row, table, column or index all change the hash. What indexes hold is
// derived from the rows; verification proves it with SQLite's integrity check rather than hashing it.

import type { Database } from "bun:sqlite";
import { Pace } from "../domain/pace";
import { allAtOnce } from "../domain/steps";

export const SNAPSHOT_FORMAT_VERSION = 1;

/** `meta` keys. Every one except CONTENT_SHA256 and SIGNATURE is part of the hashed content. */
export const META = {
  formatVersion: "format_version",
  productVersion: "product_version",
  createdAt: "created_at",
  createdAtMs: "created_at_ms",
  sourceInstance: "source_instance",
  addressCount: "address_count",
  allowlistCount: "allowlist_count",
  threatCount: "threat_count",
  feedCount: "feed_count",
  networkCount: "network_count",
  rangeTableCount: "range_table_count",
  /** JSON of the ScoringParameters in force at export (src/domain/scoring.ts). */
  scoring: "scoring",
  /** Describes the pre-built index columns; a reader that does not know it rebuilds from `addresses`. */
  indexLayout: "index_layout",
  /** Key id (see snapshot-signing.ts) of the key the snapshot is signed with; absent when unsigned. */
  signatureKeyId: "signature_key_id",
  signatureAlgorithm: "signature_algorithm",
  contentSha256: "content_sha256",
  /** Base64 Ed25519 signature over the 32 bytes of the content hash. */
  signature: "signature",
} as const;

/** Written after the hash is computed, so not covered by it (the signature covers the hash instead). */
export const UNHASHED_META_KEYS: readonly string[] = [META.contentSha256, META.signature];

/**
 * The schema. Only what lookups and blocklists need: no users, keys, webhooks, reports or report texts. Column
 * names follow the main database's, so the same queries (recent addresses, threats) run on both.
 */
export const SNAPSHOT_SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE addresses (
  ip TEXT PRIMARY KEY,
  ip_version INTEGER NOT NULL,
  reputation_score INTEGER NOT NULL,
  total_reports INTEGER NOT NULL,
  verified_reports INTEGER NOT NULL,
  categories_mask INTEGER NOT NULL,
  last_category TEXT,
  first_seen INTEGER,
  last_seen INTEGER,
  scored_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE allowlist (id INTEGER PRIMARY KEY, cidr TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
CREATE TABLE threats (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  pattern_key TEXT NOT NULL,
  cidr TEXT,
  asn INTEGER,
  category TEXT,
  ip_count INTEGER NOT NULL,
  addresses TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  window_end INTEGER NOT NULL,
  detected_at INTEGER NOT NULL
);
CREATE TABLE feeds (name TEXT PRIMARY KEY, category TEXT NOT NULL, severity INTEGER NOT NULL, entry_count INTEGER NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE feed_entries (
  feed_name TEXT NOT NULL,
  cidr TEXT NOT NULL,
  ip_version INTEGER NOT NULL,
  prefix_length INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (feed_name, cidr)
) WITHOUT ROWID;
CREATE TABLE range_tables (position INTEGER PRIMARY KEY, name TEXT NOT NULL, bytes BLOB NOT NULL);
CREATE TABLE index_data (position INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, type TEXT NOT NULL, bytes BLOB NOT NULL);
`;

/** Created once the rows are in: building an index over sorted keys beats updating it row by row. */
export const SNAPSHOT_INDEXES = `
CREATE INDEX addresses_last_seen ON addresses (last_seen DESC, ip);
CREATE INDEX threats_detected ON threats (detected_at);
`;

const TAG_NULL = 0;
const TAG_NUMBER = 1;
const TAG_TEXT = 2;
const TAG_BLOB = 3;
const BUFFER_BYTES = 1 << 16;
const utf8 = new TextEncoder();

/** Feeds values into SHA-256 in the canonical encoding, batching small values into one buffer. */
export class CanonicalHasher {
  private readonly hasher = new Bun.CryptoHasher("sha256");
  private readonly buffer = new Uint8Array(BUFFER_BYTES);
  private readonly view = new DataView(this.buffer.buffer);
  private used = 0;

  value(v: unknown): void {
    if (v === null || v === undefined) {
      this.room(1);
      this.buffer[this.used++] = TAG_NULL;
    } else if (typeof v === "number" || typeof v === "bigint") {
      this.room(9);
      this.buffer[this.used] = TAG_NUMBER;
      this.view.setFloat64(this.used + 1, Number(v), true);
      this.used += 9;
    } else if (typeof v === "string") {
      // At most 3 bytes per UTF-16 unit; short strings go straight into the buffer.
      if (v.length * 3 + 5 <= BUFFER_BYTES) {
        this.room(v.length * 3 + 5);
        const { written } = utf8.encodeInto(v, this.buffer.subarray(this.used + 5));
        this.buffer[this.used] = TAG_TEXT;
        this.view.setUint32(this.used + 1, written, true);
        this.used += 5 + written;
      } else {
        this.bytes(TAG_TEXT, utf8.encode(v));
      }
    } else if (v instanceof Uint8Array) {
      this.bytes(TAG_BLOB, v);
    } else {
      throw new TypeError(`cannot hash a value of type ${typeof v}`);
    }
  }

  digest(): Uint8Array {
    this.flush();
    return new Uint8Array(this.hasher.digest());
  }

  private bytes(tag: number, bytes: Uint8Array): void {
    this.room(5);
    this.buffer[this.used] = tag;
    this.view.setUint32(this.used + 1, bytes.byteLength, true);
    this.used += 5;
    if (bytes.byteLength <= BUFFER_BYTES - this.used) {
      this.buffer.set(bytes, this.used);
      this.used += bytes.byteLength;
    } else {
      this.flush();
      this.hasher.update(bytes);
    }
  }

  private room(n: number): void {
    if (this.used + n > BUFFER_BYTES) this.flush();
  }

  private flush(): void {
    if (this.used > 0) this.hasher.update(this.buffer.subarray(0, this.used));
    this.used = 0;
  }
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The primary-key columns of a table in key order (rowid when it has none). */
function orderOf(db: Database, table: string): string {
  const columns = db.query(`PRAGMA table_info(${quote(table)})`).all() as { name: string; pk: number }[];
  const keys = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
  return keys.length > 0 ? keys.map((c) => quote(c.name)).join(", ") : "rowid";
}

/** The SHA-256 of a snapshot's content, as described at the top of this module (lowercase hex). */
export function contentHash(db: Database): string {
  return allAtOnce(contentHashInSteps(db, new Pace(Infinity)));
}

/** Rows a step of the hash reads: a few milliseconds, so the hash of a million addresses yields some hundred times. */
export const HASH_STEP_ROWS = 4096;

/**
 * contentHash a step at a time, yielding after every `pace` step of rows read, so the server that makes a
 * snapshot (the snapshot job) keeps answering while a million rows are hashed. The file must not change between
 * steps (it is the export's own, still being written).
 */
export function* contentHashInSteps(db: Database, pace: Pace): Generator<void, string> {
  const h = new CanonicalHasher();
  h.value("abuse-intel-snapshot\0");
  h.value(SNAPSHOT_FORMAT_VERSION);
  for (const row of db.query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").values()) {
    for (const v of row) h.value(v);
  }
  const tables = (db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((t) => t.name);
  for (const table of tables) {
    const statement = db.query(
      `SELECT * FROM ${quote(table)}${table === "meta" ? ` WHERE key NOT IN (${UNHASHED_META_KEYS.map((k) => `'${k}'`).join(", ")})` : ""} ORDER BY ${orderOf(db, table)}`,
    );
    h.value(table);
    const names = statement.columnNames;
    h.value(names.length);
    for (const name of names) h.value(name);
    let rows = 0;
    for (const row of statement.iterate() as IterableIterator<Record<string, unknown>>) {
      for (const name of names) h.value(row[name]);
      rows++;
      if (pace.spend()) yield;
    }
    h.value(rows);
  }
  return Buffer.from(h.digest()).toString("hex");
}

/** Every row of `meta` as a map. */
export function readMeta(db: Database): Map<string, string> {
  const rows = db.query("SELECT key, value FROM meta").all() as { key: string; value: string }[];
  return new Map(rows.map((r) => [r.key, r.value]));
}
