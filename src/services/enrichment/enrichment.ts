// What the product knows of where an address is and who runs it: country and ASN/ISP from the built-in range
// table and any newer tables imported into <data-dir>/geo/, plus city (and country, ASN where it has them) from
// an optional MaxMind-format database. Special-purpose addresses (private, loopback, documentation…) are unknown.

import { Ipv4OwnerRanges, type OwnerGeo } from "./ipv4-owner-ranges";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Reader } from "mmdb-lib";
import { countryName } from "../../domain/countries";
import { AppError } from "../../domain/errors";
import { type Ip, tryParseIpv4Value } from "../../domain/ip";
import { type EnrichmentKind, RangeTable } from "../../index/range-table";

export interface EnrichmentResult {
  countryCode: string | null;
  /** English country name. */
  country: string | null;
  asn: number | null;
  isp: string | null;
  /** Only with a MaxMind-format database loaded. */
  city: string | null;
}

export interface NamedTable {
  /** "built-in", or the file name under <data-dir>/geo/. */
  name: string;
  table: RangeTable;
}

export interface EnrichmentSource {
  name: string;
  /** What it answers, e.g. ["country IPv4", "asn IPv6"], or ["city", "country"] for a MaxMind database. */
  covers: string[];
  /** When its data was produced (ISO time), when known. */
  dataTime: string | null;
  detail: string;
}

/** The file name an import of one kind and family is stored under. */
export const importedTableName = (kind: EnrichmentKind, version: 4 | 6): string => `${kind}-ipv${version}.bin`;
export const geoDirectory = (dataDir: string): string => join(dataDir, "geo");

// ---------------------------------------------------------------------------------------------------------
// Special-purpose space (IANA registries, RFC 6890 and successors): geo data for it is noise. The ip-location-db
// data itself maps 192.168.0.0/16 to AU, which is exactly why this list is applied after every source.

const SPECIAL_V4_CIDRS: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 3], // multicast 224/4 and reserved 240/4, with 255.255.255.255
];
/** The special ranges' first and last values, side by side: read by index on every lookup (no iterators). */
const SPECIAL_V4 = Float64Array.from(
  SPECIAL_V4_CIDRS.flatMap(([address, length]) => {
    const start = tryParseIpv4Value(address);
    return [start, start + 2 ** (32 - length) - 1];
  }),
);

function isSpecialIpv4(value: number): boolean {
  for (let i = 0; i < SPECIAL_V4.length; i += 2) if (value >= SPECIAL_V4[i] && value <= SPECIAL_V4[i + 1]) return true;
  return false;
}

/** What `ownerPairIdOfIpv4` answers when the enrichment has no merged table. */
export const NO_OWNER_PAIR = -1;
const NOTHING_KNOWN: OwnerGeo = { countryCode: null, isp: null };

/** Whether an address is in special-purpose space that no geo source should answer for. */
export function isSpecialPurpose(ip: Ip): boolean {
  if (ip.version === 4) return isSpecialIpv4(ip.value);
  const words = ip.words;
  const w0 = words[0];
  const w1 = words[1];
  const w2 = words[2];
  const w3 = words[3];
  if (w0 === 0 && w1 === 0 && w2 === 0 && w3 <= 1) return true; // :: and ::1
  if (w0 === 0 && w1 === 0 && w2 === 0xffff) return true; // IPv4-mapped, answered as IPv4 by the parser
  if (w0 === 0x01000000 && w1 === 0) return true; // 100::/64 discard
  if (w0 === 0x20010db8) return true; // 2001:db8::/32 documentation
  if (w0 === 0x20010002 && w1 >>> 16 === 0) return true; // 2001:2::/48 benchmarking
  if (w0 >>> 12 === 0x3fff0) return true; // 3fff::/20 documentation
  if (w0 >>> 25 === 0x7e) return true; // fc00::/7 unique local
  if (w0 >>> 22 === 0x3fa) return true; // fe80::/10 link-local
  if (w0 >>> 24 === 0xff) return true; // ff00::/8 multicast
  return false;
}

// ---------------------------------------------------------------------------------------------------------

interface MmdbAnswer {
  city: string | null;
  countryCode: string | null;
  asn: number | null;
  org: string | null;
}

type MmdbRecord = Record<string, unknown>;

/** A MaxMind-format database (GeoLite2/GeoIP2 City or ASN, DB-IP Lite, ip-location-db mmdb layouts). */
export class MmdbSource {
  private readonly reader: Reader<MmdbRecord>;

  constructor(
    readonly path: string,
    bytes: Buffer,
  ) {
    this.reader = new Reader<MmdbRecord>(bytes);
  }

  static open(path: string): MmdbSource {
    try {
      return new MmdbSource(path, readFileSync(path));
    } catch (error) {
      throw new AppError("bad_request", `cannot read the MaxMind database ${path}: ${(error as Error).message}`);
    }
  }

  get ipVersion(): number {
    return this.reader.metadata.ipVersion;
  }

  describe(): EnrichmentSource {
    const meta = this.reader.metadata;
    return {
      name: this.path,
      covers: ["city", "country", "asn"],
      dataTime: Number.isFinite(meta.buildEpoch.getTime()) ? meta.buildEpoch.toISOString() : null,
      detail: `MaxMind DB ${meta.databaseType}, IPv${meta.ipVersion}, ${meta.nodeCount} nodes`,
    };
  }

  lookup(ip: Ip): MmdbAnswer | null {
    if (ip.version === 6 && this.reader.metadata.ipVersion === 4) return null;
    let record: MmdbRecord | null;
    try {
      record = this.reader.get(ip.text);
    } catch {
      return null;
    }
    if (record === null || typeof record !== "object") return null;
    const asnValue = record.autonomous_system_number;
    const orgValue = record.autonomous_system_organization;
    return {
      city: nameOf(record.city),
      countryCode: countryCodeOf(record),
      asn: typeof asnValue === "number" && Number.isInteger(asnValue) ? asnValue : null,
      org: typeof orgValue === "string" && orgValue !== "" ? orgValue : null,
    };
  }
}

/** `{names: {en: "Berlin"}}` (GeoIP2, DB-IP) or a plain string (ip-location-db city mmdb). */
function nameOf(value: unknown): string | null {
  if (typeof value === "string") return value === "" ? null : value;
  if (value === null || typeof value !== "object") return null;
  const names = (value as { names?: Record<string, unknown> }).names;
  if (names === null || typeof names !== "object") return null;
  const name = names.en ?? Object.values(names).find((n) => typeof n === "string");
  return typeof name === "string" && name !== "" ? name : null;
}

function countryCodeOf(record: MmdbRecord): string | null {
  const country = record.country as { iso_code?: unknown } | undefined;
  const code = (country !== null && typeof country === "object" ? country.iso_code : undefined) ?? record.country_code;
  return typeof code === "string" && /^[A-Za-z]{2}$/.test(code) ? code.toUpperCase() : null;
}

// ---------------------------------------------------------------------------------------------------------

export class Enrichment {
  private tables: NamedTable[] = [];
  /** Per kind and family, the tables that carry it, newest data first; the first with an answer wins. */
  private countryV4: RangeTable[] = [];
  private countryV6: RangeTable[] = [];
  private asnV4: RangeTable[] = [];
  private asnV6: RangeTable[] = [];
  private importedState = "";

  /**
   * Country and owner of IPv4 addresses in one search, when the tables allow it (see ipv4-owner-ranges.ts): built
   * on first use (undefined until then), null when they do not.
   */
  private ownersV4: Ipv4OwnerRanges | null | undefined = undefined;

  /** Problems met loading imported tables (a damaged file is skipped, not fatal). */
  warnings: string[] = [];

  constructor(
    private readonly builtIn: RangeTable,
    imported: NamedTable[] = [],
    private readonly mmdb: MmdbSource | null = null,
    private readonly dataDir: string | null = null,
  ) {
    this.setImported(imported);
  }

  /** Whether a MaxMind-format database is loaded (city is only known then). */
  get hasMmdb(): boolean {
    return this.mmdb !== null;
  }

  /** The built-in table and the imported ones, for snapshots and `geo` output. */
  rangeTables(): readonly NamedTable[] {
    return this.tables;
  }

  /**
   * The id of an IPv4 address's pair of country code and network owner, as `lookup` gives them (`ownerPairGeo`
   * tells them), or NO_OWNER_PAIR when this enrichment has no merged table (several tables of a kind, or a
   * MaxMind database). Ids are dense from 0; special-purpose space, where nothing is known, is the id after the
   * table's last. Valid until the imported tables change (`reloadImported`).
   */
  ownerPairIdOfIpv4(value: number): number {
    const owners = this.ownersV4 === undefined ? this.prepareOwnerRanges() : this.ownersV4;
    if (owners === null) return NO_OWNER_PAIR;
    return isSpecialIpv4(value) ? owners.pairCount : owners.pairIdOf(value);
  }

  /** The country code and network owner of a pair id from `ownerPairIdOfIpv4`. */
  ownerPairGeo(id: number): OwnerGeo {
    const owners = this.ownersV4;
    if (owners === null || owners === undefined) throw new Error("no merged table of country and owner");
    return id === owners.pairCount ? NOTHING_KNOWN : owners.geoOfPair(id);
  }

  /**
   * Builds the merged table of `ownerPairIdOfIpv4` now (about 50-100 ms at the built-in data's size) rather than at
   * the first lookup that needs it: a server calls this once it listens. Null when the tables do not allow one:
   * several tables of a kind (the first with an answer wins, per address) or a MaxMind database.
   */
  prepareOwnerRanges(): Ipv4OwnerRanges | null {
    if (this.ownersV4 === undefined) {
      const merged = this.countryV4.length === 1 && this.asnV4.length === 1 && this.mmdb === null;
      this.ownersV4 = merged ? Ipv4OwnerRanges.build(this.countryV4[0], this.asnV4[0]) : null;
    }
    return this.ownersV4;
  }

  lookup(ip: Ip): EnrichmentResult {
    if (isSpecialPurpose(ip)) return { countryCode: null, country: null, asn: null, isp: null, city: null };
    const v4 = ip.version === 4;

    let countryCode: string | null = null;
    const countryTables = v4 ? this.countryV4 : this.countryV6;
    for (let t = 0; t < countryTables.length; t++) {
      const table = countryTables[t];
      const index = table.countryIndex(ip);
      if (index !== 0) {
        countryCode = table.countryCodeAt(index);
        break;
      }
    }
    let asn: number | null = null;
    let isp: string | null = null;
    const asnTables = v4 ? this.asnV4 : this.asnV6;
    for (let t = 0; t < asnTables.length; t++) {
      const table = asnTables[t];
      const record = table.asnRecord(ip);
      if (record !== 0) {
        asn = table.asnAt(record);
        isp = table.orgAt(record);
        break;
      }
    }
    let city: string | null = null;
    if (this.mmdb !== null) {
      const answer = this.mmdb.lookup(ip);
      if (answer !== null) {
        city = answer.city;
        if (answer.countryCode !== null) countryCode = answer.countryCode;
        if (answer.asn !== null) {
          asn = answer.asn;
          isp = answer.org;
        }
      }
    }
    const name = countryName(countryCode);
    // ZZ and other unassigned codes mean "unknown" to every consumer of this record.
    if (name === null) countryCode = null;
    return { countryCode, country: name, asn, isp, city };
  }

  sources(): EnrichmentSource[] {
    const out = this.tables.map(({ name, table }) => {
      const covers: string[] = [];
      const times: number[] = [];
      for (const kind of ["country", "asn"] as const) {
        for (const version of [4, 6] as const) {
          if (table.has(kind, version)) {
            covers.push(`${kind} IPv${version}`);
            times.push(table.dataTime(kind));
          }
        }
      }
      const time = times.length > 0 ? Math.min(...times) : 0;
      return { name, covers, dataTime: time > 0 ? new Date(time).toISOString() : null, detail: table.source };
    });
    if (this.mmdb !== null) out.push(this.mmdb.describe());
    return out;
  }

  /**
   * Re-reads <data-dir>/geo/ when its files changed since the last load (a `geo import` by another process);
   * returns whether anything changed. Cheap enough to call every second or two.
   */
  reloadImported(): boolean {
    if (this.dataDir === null) return false;
    const state = importedFilesState(this.dataDir);
    if (state === this.importedState) return false;
    const { tables, warnings } = loadImportedTables(this.dataDir);
    this.warnings = warnings;
    this.setImported(tables);
    return true;
  }

  private setImported(imported: NamedTable[]): void {
    if (this.dataDir !== null) this.importedState = importedFilesState(this.dataDir);
    this.tables = [{ name: "built-in", table: this.builtIn }, ...imported];
    // Newer data first; on a tie an imported table goes before the built-in one (it was loaded on purpose).
    const ordered = (kind: EnrichmentKind, version: 4 | 6) =>
      [...imported, { name: "built-in", table: this.builtIn }]
        .map((t) => t.table)
        .filter((t) => t.has(kind, version))
        .sort((a, b) => b.dataTime(kind) - a.dataTime(kind));
    this.countryV4 = ordered("country", 4);
    this.countryV6 = ordered("country", 6);
    this.asnV4 = ordered("asn", 4);
    this.asnV6 = ordered("asn", 6);
    this.ownersV4 = undefined;
  }
}

function importedFiles(dataDir: string): string[] {
  const dir = geoDirectory(dataDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".bin"))
    .sort();
}

function importedFilesState(dataDir: string): string {
  return importedFiles(dataDir)
    .map((f) => {
      try {
        const s = statSync(join(geoDirectory(dataDir), f));
        return `${f}:${s.size}:${s.mtimeMs}`;
      } catch {
        return `${f}:gone`;
      }
    })
    .join("|");
}

/** Loads every table under <data-dir>/geo/; a file that is not a valid table is skipped with a warning. */
export function loadImportedTables(dataDir: string): { tables: NamedTable[]; warnings: string[] } {
  const tables: NamedTable[] = [];
  const warnings: string[] = [];
  for (const name of importedFiles(dataDir)) {
    const path = join(geoDirectory(dataDir), name);
    try {
      tables.push({ name, table: RangeTable.fromBytes(readFileSync(path)) });
    } catch (error) {
      warnings.push(`skipped ${path}: ${(error as Error).message}`);
    }
  }
  return { tables, warnings };
}

let builtInTable: Promise<RangeTable> | null = null;

/** The built-in table: embedded in the executable, read from build/generated/ in development. Loaded once. */
export function loadBuiltInTable(): Promise<RangeTable> {
  builtInTable ??= (async () => {
    let path: string;
    try {
      ({ embeddedTablePath: path } = await import("./embedded-enrichment"));
    } catch (error) {
      throw new AppError(
        "internal_error",
        `the built-in enrichment table is missing (run \`bun build/pack-enrichment.ts\`): ${(error as Error).message}`,
      );
    }
    return RangeTable.fromBytes(await Bun.file(path).arrayBuffer());
  })();
  builtInTable.catch(() => (builtInTable = null));
  return builtInTable;
}

export interface OpenEnrichmentOptions {
  /** Where imported tables live (<data-dir>/geo/); null or absent = built-in data only. */
  dataDir?: string | null;
  /** `--geo-mmdb FILE`. */
  mmdbPath?: string | null;
  /** A built-in table from elsewhere (a snapshot); default the embedded one. */
  builtIn?: RangeTable;
}

export async function openEnrichment(options: OpenEnrichmentOptions = {}): Promise<Enrichment> {
  const builtIn = options.builtIn ?? (await loadBuiltInTable());
  const dataDir = options.dataDir ?? null;
  const { tables, warnings } = dataDir !== null ? loadImportedTables(dataDir) : { tables: [], warnings: [] };
  const mmdb = options.mmdbPath ? MmdbSource.open(options.mmdbPath) : null;
  const enrichment = new Enrichment(builtIn, tables, mmdb, dataDir);
  enrichment.warnings = warnings;
  return enrichment;
}
