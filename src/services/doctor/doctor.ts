// `abuse-intel doctor` (issue 18): everything that can be wrong with a data directory's database, found without
// changing it: the file (header, size), the tables, SQLite's integrity_check and foreign keys, and the addresses
// the index is built from against their reports (each row rescored at the time it was scored must agree).

import type { Database } from "bun:sqlite";
import { parseIp } from "../../domain/ip";
import type { ScoringParameters } from "../../domain/scoring";
import { categoriesFromMask, categoryAt } from "../../domain/categories";
import { type AddressRecord, sameRecord } from "../../index/reputation-index";
import { recordOfRow, scoredRows } from "../../store/address-rows";
import { fileProblem, foreignKeyProblems, integrityProblems, missingTables, reportedWithoutRow } from "../../store/database-checks";
import type { Store } from "../../store/database";
import { createAddressScorer } from "../reports/scorer";
import type { Listing } from "../../domain/feeds";
import type { Ip } from "../../domain/ip";

export interface Finding {
  check: string;
  ok: boolean;
  /** What was found: problems, or what was checked. */
  details: string[];
}

/** The checks that need no open database: run first, and alone when the file is damaged. */
export function fileFindings(path: string): Finding[] {
  const problem = fileProblem(path);
  return [{ check: "file", ok: problem === null, details: [problem ?? `${path}: SQLite header and size agree`] }];
}

const SHOWN = 20;

export function databaseFindings(store: Store, params: ScoringParameters, listingsAround?: (ip: Ip) => Listing[]): Finding[] {
  const sqlite: Database = store.sqlite;
  const findings: Finding[] = [];
  const missing = missingTables(sqlite);
  findings.push({ check: "tables", ok: missing.length === 0, details: missing.length === 0 ? ["every table of the schema is there"] : missing.map((t) => `table ${t} is missing`) });
  const integrity = integrityProblems(sqlite);
  findings.push({ check: "integrity_check", ok: integrity.length === 0, details: integrity.length === 0 ? ["ok"] : integrity });
  const keys = foreignKeyProblems(sqlite);
  findings.push({ check: "foreign keys", ok: keys.length === 0, details: keys.length === 0 ? ["ok"] : keys.slice(0, SHOWN) });
  if (missing.includes("addresses") || missing.includes("reports")) return findings;

  // The index against the store: a row rescored at its own scored_at must give the same record (the index's own
  // comparison: score, counts, categories, first and last seen) and the same due time for the rescore job (a row
  // due later than its reports say keeps a score that should have decayed).
  const scorer = createAddressScorer(store, params, { persist: false, listingsAround });
  const disagree: string[] = [];
  let rows = 0;
  for (const row of scoredRows(sqlite)) {
    rows++;
    const { record: fresh, rescoreDueMs } = scorer.evaluate(parseIp(row.ip), row.scoredAt);
    const stored = recordOfRow(row);
    // No reports give no record: a row of score 100 and no reports says as much.
    const sameScore = fresh === null ? stored.reputationScore === 100 && stored.totalReports === 0 && stored.verifiedReports === 0 : sameRecord(stored, fresh);
    if (!sameScore) disagree.push(`${row.ip}: ${difference(stored, fresh)}`);
    else if (fresh !== null && row.rescoreDueAt !== rescoreDueMs) disagree.push(`${row.ip}: stored rescore due ${isoOrNever(row.rescoreDueAt)}, its reports give ${isoOrNever(rescoreDueMs)}`);
  }
  const orphans = reportedWithoutRow(sqlite);
  const problems = [...disagree.slice(0, SHOWN), ...orphans.slice(0, SHOWN).map((ip) => `${ip} has counting reports but no addresses row: lookups do not see it`)];
  if (disagree.length > SHOWN) problems.push(`… and ${disagree.length - SHOWN} more rows that disagree`);
  findings.push({
    check: "index against reports",
    ok: problems.length === 0,
    details: problems.length === 0 ? [`${rows} address rows agree with their reports`] : problems,
  });
  return findings;
}

function isoOrNever(ms: number | null): string {
  return ms === null ? "never" : new Date(ms).toISOString();
}

/** How a stored record differs from what its reports give (null: they give none), in the terms of the row. */
function difference(stored: AddressRecord, fresh: AddressRecord | null): string {
  const score = fresh?.reputationScore ?? 100;
  const total = fresh?.totalReports ?? 0;
  if (score !== stored.reputationScore || total !== stored.totalReports || (fresh?.verifiedReports ?? 0) !== stored.verifiedReports) {
    return `stored score ${stored.reputationScore} (${stored.totalReports} reports), its reports give ${score} (${total})`;
  }
  const categories = (r: AddressRecord | null) =>
    `${categoriesFromMask(r?.categoriesMask ?? 0).join("|") || "none"} (last ${r === null || r.lastCategoryBit < 0 ? "none" : categoryAt(r.lastCategoryBit)})`;
  if ((fresh?.categoriesMask ?? 0) !== stored.categoriesMask || (fresh?.lastCategoryBit ?? -1) !== stored.lastCategoryBit) {
    return `stored categories ${categories(stored)}, its reports give ${categories(fresh)}`;
  }
  const seen = (r: AddressRecord | null) => `first seen ${r?.firstSeenMs ?? "none"}, last seen ${r?.lastSeenMs ?? "none"}`;
  return `stored ${seen(stored)}, its reports give ${seen(fresh)}`;
}
