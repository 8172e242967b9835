// `abuse-intel geo import FILE` and `abuse-intel geo lookup IP...`: turns an ip-location-db range CSV into range
// tables under <data-dir>/geo/ (one file per kind and family, replaced atomically, read by the server without a
// restart), and renders what the enrichment knows of addresses as lines for a person.

import { mkdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../../domain/errors";
import type { Ip } from "../../domain/ip";
import { type EnrichmentKind, RangeTable } from "../../index/range-table";
import { type RangeTableContent, writeRangeTable } from "../../index/range-table-writer";
import { type Enrichment, geoDirectory, importedTableName, loadBuiltInTable } from "./enrichment";
import { type GeoCsvBadLine, GeoCsvError, type GeoCsvLayout, parseGeoCsv } from "./geo-csv";

export interface GeoImportOptions {
  dataDir: string;
  /** When the data was produced (ms); default the file's modification time. Decides which source is newer. */
  dataTime?: number;
  /** The table to compare dates with for the "older than the built-in data" warning; default the built-in one. */
  builtIn?: RangeTable | null;
}

export interface GeoImportWritten {
  version: 4 | 6;
  path: string;
  /** Good rows of this family. */
  rows: number;
  /** Entries in the written table (ranges after resolving overlaps, plus gaps). */
  entries: number;
  bytes: number;
}

export interface GeoImportResult {
  file: string;
  layout: GeoCsvLayout;
  dataTime: number;
  written: GeoImportWritten[];
  rowCount: number;
  badLineCount: number;
  /** The first 100 bad lines. */
  badLines: GeoCsvBadLine[];
  warnings: string[];
}

export async function importGeoFile(file: string, options: GeoImportOptions): Promise<GeoImportResult> {
  let text: string;
  let mtime: number;
  try {
    text = await Bun.file(file).text();
    mtime = Math.floor(statSync(file).mtimeMs);
  } catch (error) {
    throw new AppError("bad_request", `cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed;
  try {
    parsed = parseGeoCsv(text);
  } catch (error) {
    if (error instanceof GeoCsvError) throw new AppError("bad_request", `${file}: ${error.message}`);
    throw error;
  }
  if (parsed.rowCount === 0) {
    const first = parsed.badLines.slice(0, 3).map((b) => `line ${b.line}: ${b.reason}`).join("; ");
    throw new AppError("bad_request", `${file}: no valid ranges (${parsed.badLineCount} bad lines${first ? `: ${first}` : ""})`);
  }

  const dataTime = options.dataTime ?? mtime;
  const kind: EnrichmentKind = parsed.layout;
  const dir = geoDirectory(options.dataDir);
  mkdirSync(dir, { recursive: true });
  const written: GeoImportWritten[] = [];
  const source = `geo import of ${file} at ${new Date().toISOString()}`;
  for (const version of [4, 6] as const) {
    const content: RangeTableContent = { source };
    let rows: number;
    if (kind === "country") {
      const ranges = version === 4 ? parsed.countryV4 : parsed.countryV6;
      Object.assign(content, { countryDataTime: dataTime, [version === 4 ? "countryV4" : "countryV6"]: ranges });
      rows = ranges.length;
    } else {
      const ranges = version === 4 ? parsed.asnV4 : parsed.asnV6;
      Object.assign(content, { asnDataTime: dataTime, [version === 4 ? "asnV4" : "asnV6"]: ranges });
      rows = ranges.length;
    }
    if (rows === 0) continue;
    const bytes = writeRangeTable(content);
    const path = join(dir, importedTableName(kind, version));
    // Write beside and rename: a running server reloading the directory never reads half a table.
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, bytes);
    renameSync(temporary, path);
    written.push({ version, path, rows, entries: RangeTable.fromBytes(bytes).entryCount(kind, version), bytes: bytes.byteLength });
  }

  const warnings: string[] = [];
  let builtIn = options.builtIn;
  if (builtIn === undefined) builtIn = await loadBuiltInTable().catch(() => null);
  if (builtIn !== null && builtIn.dataTime(kind) > dataTime) {
    warnings.push(
      `the data (${new Date(dataTime).toISOString()}) is older than the built-in ${kind} data ` +
        `(${new Date(builtIn.dataTime(kind)).toISOString()}): the built-in data answers first, this import only where it has no range`,
    );
  }
  return {
    file,
    layout: parsed.layout,
    dataTime,
    written,
    rowCount: parsed.rowCount,
    badLineCount: parsed.badLineCount,
    badLines: parsed.badLines,
    warnings,
  };
}

/** The report `geo import` prints. */
export function formatGeoImportReport(result: GeoImportResult): string[] {
  const kind = result.layout === "country" ? "country" : "ASN";
  const lines = [`imported ${result.rowCount} ${kind} ranges from ${result.file} (data time ${new Date(result.dataTime).toISOString()})`];
  for (const w of result.written) lines.push(`  IPv${w.version}: ${w.rows} ranges → ${w.path} (${w.entries} entries, ${w.bytes} bytes)`);
  if (result.badLineCount > 0) {
    lines.push(`skipped ${result.badLineCount} bad lines:`);
    for (const b of result.badLines) lines.push(`  line ${b.line}: ${b.reason}: ${b.text}`);
    if (result.badLineCount > result.badLines.length) lines.push(`  … and ${result.badLineCount - result.badLines.length} more`);
  }
  for (const w of result.warnings) lines.push(`warning: ${w}`);
  return lines;
}

/**
 * One line per address for `geo lookup`: `8.8.8.8: US United States; AS15169 Google LLC`, with `; city …` when a
 * MaxMind-format database is loaded. Unknown parts say so.
 */
export function geoLookupLines(enrichment: Enrichment, ips: readonly Ip[]): string[] {
  return ips.map((ip) => {
    const r = enrichment.lookup(ip);
    const parts = [
      r.countryCode !== null ? `${r.countryCode} ${r.country ?? ""}`.trimEnd() : "country unknown",
      r.asn !== null ? `AS${r.asn}${r.isp !== null ? ` ${r.isp}` : ""}` : r.isp !== null ? r.isp : "ASN unknown",
    ];
    if (enrichment.hasMmdb) parts.push(r.city !== null ? `city ${r.city}` : "city unknown");
    return `${ip.text}: ${parts.join("; ")}`;
  });
}
