// Where the offline commands (`check`, `blocklist`) and a snapshot server get their answers: a snapshot file, or
// the local data directory opened read-only. Either way the answers come from the same code as the server's,
// `createReputation` over a ReputationIndex, the enrichment and the allowlist:
// - a snapshot loads its pre-built index from blobs (no rebuild) and opens its range tables only when a lookup
//   first needs a country or ISP; its lookups run at the snapshot's creation time, so they give the answers the
//   exporting server gave at that moment (a snapshot holds scores, not reports, so it cannot decay them further);
// - the data directory builds the index from the `addresses` table as the server does at start, and runs on the
//   system clock; an address past retention is rescored in memory, never written.

import { indexBlobRowsInSteps, openSnapshotDatabase, rangeTableRowsInSteps, snapshotAllowlistRows } from "../../store/snapshot-file";
import type { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { type Clock, systemClock } from "../../domain/clock";
import { type Config, scoringParametersOf } from "../../config";
import { AppError } from "../../domain/errors";
import { tryParseCidr, type Ip } from "../../domain/ip";
import { resolveScoringParameters, type ScoringParameters, type ScoringParameterOverrides } from "../../domain/scoring";
import { CidrSet } from "../../index/cidr-set";
import { RangeTable } from "../../index/range-table";
import type { ReputationIndex } from "../../index/reputation-index";
import { databasePath, openStore, type Db, type Store } from "../../store/database";
import { type AddressScorer, createAddressScorer } from "../reports/scorer";
import { type Allowlist, type AllowlistEntry, createAllowlist } from "../allowlist/allowlist";
import { Enrichment, MmdbSource, openEnrichment, type NamedTable } from "../enrichment/enrichment";
import { IndexSync } from "../changes/index-sync";
import { createReputation, type GeoLookup, type Reputation } from "../lookups/reputation";
import { META, readMeta, SNAPSHOT_FORMAT_VERSION } from "../../store/snapshot-format";
import { indexFromBlobsInSteps, indexFromRows, indexLayout, indexOfAddresses, type IndexBlob } from "./index-blobs";
import { allAtOnce } from "../../domain/steps";
import type { SnapshotBlobs } from "./snapshot-blobs";
import { infoFromMeta, type SnapshotInfo } from "./export";
import { readListings } from "../../store/feeds";
import { addressRowsAmong, addressRowsAmongIn } from "../../store/address-rows";
import { ListedNetworks } from "../feeds/listed-networks";
import { putListingsInto } from "../feeds/listing-records";

/** What lookups and blocklists read, from a snapshot or the data directory. */
export interface LookupSource {
  /** "snapshot FILE" or "data directory DIR", for messages. */
  description: string;
  /** The snapshot's description; null for the data directory. */
  info: SnapshotInfo | null;
  /** Read-only. */
  store: Store;
  scoring: ScoringParameters;
  index: ReputationIndex;
  allowlist: Allowlist;
  /** The time lookups run at: a snapshot's creation time, or the system clock. */
  clock: Clock;
  /** Country, ASN, ISP and city; the snapshot's tables are read on the first lookup that needs them. */
  geo: GeoLookup;
  reputation: Reputation;
  close(): void;
}

const readOnly = (what: string) => new AppError("read_only", `${what}: this is a read-only copy of the data`);

/** A Store over a read-only connection that has no drizzle schema behind it (a snapshot). */
function snapshotStore(sqlite: Database, path: string): Store {
  return {
    sqlite,
    path,
    close: () => sqlite.close(),
    get db(): Db {
      throw new AppError("internal_error", "a snapshot has no drizzle database: read it with SQL");
    },
  };
}

/** The allowlist as a snapshot carries it (networks only): answers lookups, refuses changes. */
export function snapshotAllowlist(db: Database): Allowlist {
  const set = new CidrSet();
  const entries: AllowlistEntry[] = [];
  for (const row of snapshotAllowlistRows(db)) {
    const cidr = tryParseCidr(row.cidr);
    if (typeof cidr === "string") continue;
    set.add(cidr, row.id);
    entries.push({ id: String(row.id), cidr: row.cidr, note: "", createdAt: new Date(row.createdAt).toISOString() });
  }
  return {
    set,
    contains: (ip) => set.contains(ip),
    list: () => entries.slice(),
    add: () => {
      throw readOnly("the allowlist cannot be changed");
    },
    remove: () => {
      throw readOnly("the allowlist cannot be changed");
    },
    reload: () => {},
    onChange: () => {},
  };
}

/** A snapshot holds scores, not reports: nothing can be rescored from it. */
const noScorer: AddressScorer = {
  evaluate: () => {
    throw readOnly("a snapshot holds no reports to rescore from");
  },
  rescore: () => {
    throw readOnly("a snapshot holds no reports to rescore from");
  },
  rescoreAll: () => {
    throw readOnly("a snapshot holds no reports to rescore from");
  },
};

export interface OpenSnapshotOptions {
  /** A MaxMind-format database adding cities (it is not carried in snapshots). */
  mmdbPath?: string | null;
  /**
   * Only these addresses will be looked up: their rows are read instead of the whole index (a cold `check` of a
   * few addresses). Lookups of other addresses, lists and `recent` are then wrong: leave it out for those.
   */
  only?: readonly Ip[];
  /**
   * An enrichment whose range tables may be the snapshot's (an edge's last snapshot): used as it is when they are
   * byte for byte, with the merged table it has built (50-250 ms to build again, in one piece).
   */
  sameTablesAs?: Enrichment;
  /** The snapshot's blobs, already read (on a worker thread: snapshot-blobs.ts); default: read here, in steps. */
  blobs?: SnapshotBlobs;
}

/** Bytes compared a step when a snapshot's range tables are checked against those of an enrichment. */
const COMPARE_STEP_BYTES = 4 * 1024 * 1024;

/** Whether `rows` hold exactly the tables of `known`, names and bytes, compared a few MiB a step. */
function* sameTables(known: readonly NamedTable[], rows: readonly { name: string; bytes: Uint8Array }[]): Generator<void, boolean> {
  if (known.length !== rows.length) return false;
  for (let i = 0; i < rows.length; i++) {
    const a = known[i].table.bytes;
    const b = rows[i].bytes;
    if (known[i].name !== rows[i].name || a.byteLength !== b.byteLength) return false;
    for (let at = 0; at < a.byteLength; at += COMPARE_STEP_BYTES) {
      if (Buffer.compare(a.subarray(at, at + COMPARE_STEP_BYTES), b.subarray(at, at + COMPARE_STEP_BYTES)) !== 0) return false;
      yield;
    }
  }
  return true;
}

export interface OpenedSnapshot extends LookupSource {
  info: SnapshotInfo;
  /** The enrichment from the snapshot's range tables (loaded on first use). */
  enrichment(): Enrichment;
  /** The same, a range table a step. */
  enrichmentInSteps(): Generator<void, Enrichment>;
  /** Whether the index came from the pre-built blobs (false: rebuilt from the rows, another layout). */
  indexPrebuilt: boolean;
}

/** Opens a snapshot for lookups: meta, the pre-built index, the allowlist; range tables on first use. */
export function openSnapshot(file: string, options: OpenSnapshotOptions = {}): OpenedSnapshot {
  return allAtOnce(openSnapshotInSteps(file, options));
}

/**
 * The same in steps: a blob, a tree, the listings, the allowlist a step, so an edge swapping in a new snapshot
 * lets its requests through between them (run with inTurns; issue 29).
 */
export function* openSnapshotInSteps(file: string, options: OpenSnapshotOptions = {}): Generator<void, OpenedSnapshot> {
  const db = openSnapshotDatabase(file);
  try {
    const meta = readMeta(db);
    const info = infoFromMeta(file, meta);
    if (info.formatVersion !== SNAPSHOT_FORMAT_VERSION) {
      throw new AppError("bad_request", `${file} has snapshot format ${info.formatVersion}; this build reads format ${SNAPSHOT_FORMAT_VERSION}`);
    }
    const scoring = resolveScoringParameters((info.scoring ?? {}) as ScoringParameterOverrides);
    let index: ReputationIndex | null = null;
    if (options.only !== undefined) {
      index = indexOfAddresses(db, options.only, scoring.riskThresholds);
    } else if (meta.get(META.indexLayout) === indexLayout()) {
      yield;
      const blobs = (options.blobs?.index ?? (yield* indexBlobRowsInSteps(db))) as IndexBlob[];
      index = yield* indexFromBlobsInSteps(blobs, scoring.riskThresholds, { linksChecked: options.blobs?.linksChecked === true, networkCount: options.blobs?.networkCount });
    }
    const indexPrebuilt = index !== null && options.only === undefined;
    const listings = readListings(db);
    const listed = ListedNetworks.load(listings.feeds, listings.entries);
    yield;
    if (!indexPrebuilt) {
      // The pre-built index carries the listings; one rebuilt from rows takes them now.
      index ??= indexFromRows(db, scoring.riskThresholds);
      putListingsInto(index, listed, info.createdAtMs, scoring, addressRowsAmongIn(db));
    }
    if (index === null) throw new AppError("internal_error", "no index");
    const store = snapshotStore(db, file);
    const allowlist = snapshotAllowlist(db);
    yield;
    const clock: Clock = { now: () => info.createdAtMs };

    let enrichment: Enrichment | null = null;
    function* enrichmentInSteps(): Generator<void, Enrichment> {
      if (enrichment !== null) return enrichment;
      const rows = options.blobs?.ranges ?? (yield* rangeTableRowsInSteps(db));
      if (rows.length === 0) throw new AppError("bad_request", `${file} carries no enrichment tables`);
      const known = options.sameTablesAs;
      if (known !== undefined && (yield* sameTables(known.rangeTables(), rows))) {
        enrichment = known;
        return known;
      }
      const tables: NamedTable[] = rows.map((r) => ({ name: r.name, table: RangeTable.fromBytes(r.bytes) }));
      const mmdb = options.mmdbPath ? MmdbSource.open(options.mmdbPath) : null;
      enrichment = new Enrichment(tables[0].table, tables.slice(1), mmdb, null);
      return enrichment;
    }
    const loadEnrichment = (): Enrichment => allAtOnce(enrichmentInSteps());
    const geo: GeoLookup = { lookup: (ip: Ip) => loadEnrichment().lookup(ip) };
    const reputation = createReputation({ index, geo, allowlist, store, clock, scorer: noScorer, params: scoring, networksAround: (ip) => listed.networksAround(ip) });
    return {
      description: `snapshot ${file}`,
      info,
      store,
      scoring,
      index,
      indexPrebuilt,
      allowlist,
      clock,
      geo,
      enrichment: loadEnrichment,
      enrichmentInSteps,
      reputation,
      close: () => db.close(),
    };
  } catch (error) {
    db.close();
    throw error;
  }
}


/**
 * The local data directory, read-only, answering as a server on it would: the index built from `addresses`,
 * the enrichment (built-in, imported, and --geo-mmdb) loaded only when `needGeo`.
 */
export async function openDataDirectory(config: Config, options: { needGeo: boolean; clock?: Clock; only?: readonly Ip[] }): Promise<LookupSource> {
  if (!existsSync(databasePath(config.dataDir))) {
    throw new AppError("not_found", `no database in ${config.dataDir} (give --data-dir, or --snapshot FILE)`);
  }
  const store = openStore(config.dataDir, { readonly: true });
  try {
    const clock = options.clock ?? systemClock;
    const scoring = scoringParametersOf(config);
    const index = options.only !== undefined ? indexOfAddresses(store.sqlite, options.only, scoring.riskThresholds) : IndexSync.build(store, scoring.riskThresholds).index;
    const allowlist = createAllowlist(store, clock);
    const geo: GeoLookup = options.needGeo
      ? await openEnrichment({ dataDir: config.dataDir, mmdbPath: config.geoMmdb })
      : {
          lookup: () => {
            throw new AppError("internal_error", "enrichment was not loaded for this command");
          },
        };
    const listings = readListings(store.sqlite);
    const listed = ListedNetworks.load(listings.feeds, listings.entries);
    putListingsInto(index, listed, clock.now(), scoring, addressRowsAmong(store));
    // The server's scorer without its writes: the data directory is opened read-only.
    const scorer = createAddressScorer(store, scoring, { persist: false, listingsAround: (ip) => listed.listingsAround(ip) });
    const reputation = createReputation({ index, geo, allowlist, store, clock, scorer, params: scoring, networksAround: (ip) => listed.networksAround(ip) });
    return { description: `data directory ${config.dataDir}`, info: null, store, scoring, index, allowlist, clock, geo, reputation, close: () => store.close() };
  } catch (error) {
    store.close();
    throw error;
  }
}

/**
 * `--snapshot FILE` when given, else the data directory. With `only`, the source answers for those addresses
 * alone (see OpenSnapshotOptions.only).
 */
export async function openLookupSource(config: Config, options: { snapshot?: string | null; needGeo: boolean; only?: readonly Ip[] }): Promise<LookupSource> {
  const file = options.snapshot ?? null;
  if (file !== null) return openSnapshot(file, { mmdbPath: config.geoMmdb, only: options.only });
  return openDataDirectory(config, { needGeo: options.needGeo, only: options.only });
}
