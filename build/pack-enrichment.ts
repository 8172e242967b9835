// Packs the ip-location-db country and ASN range CSVs (npm dev dependencies) into build/generated/enrichment.bin,
// the range table the executable embeds. As a script it rewrites the file only when it is missing or older than
// its inputs (`--force` always rewrites); `packEnrichment()` does the same for build and test scripts.

import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { RANGE_TABLE_MAGIC, RANGE_TABLE_VERSION } from "../src/index/range-table";
import { writeRangeTable } from "../src/index/range-table-writer";
import { parseGeoCsv } from "../src/services/enrichment/geo-csv";

const root = join(import.meta.dir, "..");
export const enrichmentTablePath = join(root, "build/generated/enrichment.bin");

const countryPackage = join(root, "node_modules/@ip-location-db/geo-whois-asn-country");
const asnPackage = join(root, "node_modules/@ip-location-db/asn");
const inputs = {
  countryV4: join(countryPackage, "geo-whois-asn-country-ipv4-num.csv"),
  countryV6: join(countryPackage, "geo-whois-asn-country-ipv6-num.csv"),
  asnV4: join(asnPackage, "asn-ipv4-num.csv"),
  asnV6: join(asnPackage, "asn-ipv6-num.csv"),
};
/** Files whose change makes the packed table stale: the data and the code that shapes it. */
const dependencies = [
  ...Object.values(inputs),
  join(countryPackage, "package.json"),
  join(asnPackage, "package.json"),
  join(root, "build/pack-enrichment.ts"),
  join(root, "src/index/range-table-writer.ts"),
  join(root, "src/services/enrichment/geo-csv.ts"),
];

export interface PackResult {
  path: string;
  /** False when the existing file was up to date. */
  written: boolean;
  bytes: number;
  milliseconds: number;
}

/** The package's version, and its data time: ip-location-db versions end in the build hour, YYYYMMDDHH. */
function packageInfo(dir: string, csv: string): { version: string; dataTime: number } {
  const version = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
  const m = /\.(\d{4})(\d{2})(\d{2})(\d{2})$/.exec(version);
  const dataTime = m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4]) : statSync(csv).mtimeMs;
  return { version, dataTime };
}

/** Whether the packed table exists, is of the current format, and is newer than everything it is made from. */
export function isEnrichmentTableFresh(path = enrichmentTablePath): boolean {
  if (!existsSync(path)) return false;
  const header = new Uint8Array(6);
  const fd = openSync(path, "r");
  try {
    readSync(fd, header, 0, 6, 0);
  } finally {
    closeSync(fd);
  }
  const magic = String.fromCharCode(...header.subarray(0, 4));
  if (magic !== RANGE_TABLE_MAGIC || (header[4] | (header[5] << 8)) !== RANGE_TABLE_VERSION) return false;
  const packed = statSync(path).mtimeMs;
  return dependencies.every((file) => !existsSync(file) || statSync(file).mtimeMs <= packed);
}

/** Builds the table bytes from the packages' CSVs. */
export async function buildEnrichmentTable(): Promise<Uint8Array> {
  for (const file of Object.values(inputs)) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run npm install (it is a dev dependency)`);
  }
  const country = packageInfo(countryPackage, inputs.countryV4);
  const asn = packageInfo(asnPackage, inputs.asnV4);
  const read = async (file: string, family: 4 | 6) => {
    const parsed = parseGeoCsv(await Bun.file(file).text(), { numbers: family, maxBadLines: 5 });
    if (parsed.badLineCount > 0) {
      const first = parsed.badLines.map((b) => `line ${b.line}: ${b.reason}`).join("; ");
      console.warn(`pack-enrichment: ${file}: ${parsed.badLineCount} bad lines skipped (${first})`);
    }
    return parsed;
  };
  const [cV4, cV6, aV4, aV6] = [
    await read(inputs.countryV4, 4),
    await read(inputs.countryV6, 6),
    await read(inputs.asnV4, 4),
    await read(inputs.asnV6, 6),
  ];
  return writeRangeTable({
    source:
      `ip-location-db: @ip-location-db/geo-whois-asn-country ${country.version} (CC0-1.0), ` +
      `@ip-location-db/asn ${asn.version} (CC BY 4.0: RouteViews, DB-IP, NRO)`,
    countryDataTime: country.dataTime,
    asnDataTime: asn.dataTime,
    countryV4: cV4.countryV4,
    countryV6: cV6.countryV6,
    asnV4: aV4.asnV4,
    asnV6: aV6.asnV6,
  });
}

/** Writes build/generated/enrichment.bin when it is missing or stale (always with `force`). */
export async function packEnrichment(options: { force?: boolean; path?: string } = {}): Promise<PackResult> {
  const path = options.path ?? enrichmentTablePath;
  const started = performance.now();
  if (!options.force && isEnrichmentTableFresh(path)) {
    return { path, written: false, bytes: statSync(path).size, milliseconds: performance.now() - started };
  }
  const bytes = await buildEnrichmentTable();
  mkdirSync(dirname(path), { recursive: true });
  // Write beside and rename, so a concurrent reader never sees half a table.
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, bytes);
  renameSync(temporary, path);
  return { path, written: true, bytes: bytes.byteLength, milliseconds: performance.now() - started };
}

if (import.meta.main) {
  const result = await packEnrichment({ force: process.argv.includes("--force") });
  const size = `${(result.bytes / 1024 / 1024).toFixed(1)} MB`;
  console.log(
    result.written
      ? `pack-enrichment: wrote ${result.path} (${size}) in ${Math.round(result.milliseconds)} ms`
      : `pack-enrichment: ${result.path} is up to date (${size})`,
  );
}
