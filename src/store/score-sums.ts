// The running sums of the reports (reporter_score_sums, address_category_counts, score_sum_params; migration 0006):
// their units, what one address's sums hold, taking out reports that passed retention, and rebuilding the sums
// in other units. The triggers of migration 0006 keep them current on every write to `reports`.

import type { Database } from "bun:sqlite";
import type { Store } from "./database";
import type { ReporterSum, SumUnits } from "../domain/running-sums";

interface UnitsRow {
  epochMs: number;
  halfLifeMs: number;
  w1: number;
  w2: number;
  w3: number;
  w4: number;
  w5: number;
  verifiedMultiplier: number;
}

export interface ReporterSumRow extends ReporterSum {
  oldest: number;
  newest: number;
  floor: number;
}

/** A counting report that passed retention and is still in its reporter's sums. */
export interface PastReport {
  severity: number;
  status: string;
  createdAtMs: number;
  category: string;
}

const COUNTING = "('pending', 'verified')";

/** The term of report `r` in the sums, in SQL (the triggers' expression). */
const termSql = (r: string) => `(SELECT CASE ${r}.severity WHEN 1 THEN weight_1 WHEN 2 THEN weight_2 WHEN 3 THEN weight_3 WHEN 4 THEN weight_4 ELSE weight_5 END
            * CASE WHEN ${r}.status = 'verified' THEN verified_multiplier ELSE 1.0 END * pow(2.0, (${r}.created_at - epoch_ms) / half_life_ms)
       FROM score_sum_params WHERE id = 1)`;

export class ScoreSums {
  private readonly units;
  private readonly reporters;
  private readonly categories;
  private readonly firstCounting;
  private readonly newestCounting;
  private readonly past;
  private readonly oldestFrom;
  private readonly advance;
  private readonly takeCategory;
  private readonly dropEmptyCategories;

  constructor(private readonly sqlite: Database) {
    this.units = sqlite.prepare<UnitsRow, []>(
      `SELECT epoch_ms AS epochMs, half_life_ms AS halfLifeMs, weight_1 AS w1, weight_2 AS w2, weight_3 AS w3, weight_4 AS w4, weight_5 AS w5,
              verified_multiplier AS verifiedMultiplier FROM score_sum_params WHERE id = 1`,
    );
    this.reporters = sqlite.prepare<ReporterSumRow, [string]>(
      `SELECT reporter_id AS reporterId, weight, reports, verified, oldest, newest, floor FROM reporter_score_sums WHERE ip = ? ORDER BY reporter_id`,
    );
    this.categories = sqlite.prepare<{ category: string; reports: number }, [string]>("SELECT category, reports FROM address_category_counts WHERE ip = ? AND reports > 0");
    // Through the (ip, created_at) index from the cutoff up, or from the newest down: rejected reports in between
    // are stepped over, the years of history before the cutoff are not read.
    this.firstCounting = sqlite.prepare<{ createdAtMs: number }, [string, number]>(
      `SELECT created_at AS createdAtMs FROM reports WHERE ip = ? AND created_at >= ? AND +status IN ${COUNTING} ORDER BY created_at LIMIT 1`,
    );
    this.newestCounting = sqlite.prepare<{ createdAtMs: number; category: string }, [string, number]>(
      `SELECT created_at AS createdAtMs, category FROM reports WHERE ip = ? AND created_at >= ? AND +status IN ${COUNTING}
        ORDER BY created_at DESC, id DESC LIMIT 1`,
    );
    this.past = sqlite.prepare<PastReport, [number, string, number, number]>(
      `SELECT severity, status, created_at AS createdAtMs, category FROM reports
        WHERE reporter_id = ? AND ip = ? AND created_at >= ? AND created_at < ? AND +status IN ${COUNTING}`,
    );
    this.oldestFrom = sqlite.prepare<{ oldest: number | null }, [number, string, number]>(
      `SELECT min(created_at) AS oldest FROM reports WHERE reporter_id = ? AND ip = ? AND created_at >= ? AND +status IN ${COUNTING}`,
    );
    this.advance = sqlite.prepare<never, [number, number, number, number, number, string, number]>(
      `UPDATE reporter_score_sums SET weight = CASE WHEN reports - ?2 <= 0 THEN 0.0 ELSE max(0.0, weight - ?1) END,
              reports = reports - ?2, verified = verified - ?3, oldest = ?4, floor = ?5
        WHERE ip = ?6 AND reporter_id = ?7`,
    );
    this.takeCategory = sqlite.prepare<never, [number, string, string]>("UPDATE address_category_counts SET reports = reports - ? WHERE ip = ? AND category = ?");
    this.dropEmptyCategories = sqlite.prepare<never, [string]>("DELETE FROM address_category_counts WHERE ip = ? AND reports <= 0");
  }

  /** The units the sums are in now. */
  unitsNow(): SumUnits | null {
    const row = this.units.get();
    if (row === null) return null;
    return {
      epochMs: row.epochMs,
      halfLifeMs: row.halfLifeMs,
      severityWeights: { 1: row.w1, 2: row.w2, 3: row.w3, 4: row.w4, 5: row.w5 },
      verifiedMultiplier: row.verifiedMultiplier,
    };
  }

  reportersOf(ipText: string): ReporterSumRow[] {
    return this.reporters.all(ipText);
  }

  categoryCountsOf(ipText: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const row of this.categories.all(ipText)) counts.set(row.category, row.reports);
    return counts;
  }

  firstCountingSince(ipText: string, cutoffMs: number): number | null {
    return this.firstCounting.get(ipText, cutoffMs)?.createdAtMs ?? null;
  }

  newestCountingSince(ipText: string, cutoffMs: number): { createdAtMs: number; category: string } | null {
    return this.newestCounting.get(ipText, cutoffMs);
  }

  /** The counting reports of one reporter and address dated in [fromMs, cutoffMs). */
  pastReports(ipText: string, reporterId: number, fromMs: number, cutoffMs: number): PastReport[] {
    return this.past.all(reporterId, ipText, fromMs, cutoffMs);
  }

  /** The oldest counting report of one reporter and address from `fromMs` on, or null. */
  oldestCountingFrom(ipText: string, reporterId: number, fromMs: number): number | null {
    return this.oldestFrom.get(reporterId, ipText, fromMs)?.oldest ?? null;
  }

  /** Takes reports out of a reporter's sums and moves its floor (the reports before it are not in the sums). */
  takeOut(ipText: string, reporterId: number, weight: number, reports: number, verified: number, oldest: number, floor: number, categories: Map<string, number>): void {
    this.advance.run(weight, reports, verified, oldest, floor, ipText, reporterId);
    for (const [category, n] of categories) this.takeCategory.run(n, ipText, category);
  }

  /**
   * Deletes the address's category counts that reached 0. A reporter's row stays when empty: its floor says which
   * reports are in its sums (a row made again would take in a report from before it that stops counting later).
   */
  dropEmptyOf(ipText: string): void {
    this.dropEmptyCategories.run(ipText);
  }

  /** Sums every counting report again in `units` (after the scoring parameters changed). Call inside a transaction. */
  rebuild(units: SumUnits): void {
    const w = units.severityWeights;
    this.sqlite
      .prepare("INSERT OR REPLACE INTO score_sum_params VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)")
      .run(units.epochMs, units.halfLifeMs, w[1], w[2], w[3], w[4], w[5], units.verifiedMultiplier);
    this.sqlite.exec("DELETE FROM reporter_score_sums");
    this.sqlite.exec("DELETE FROM address_category_counts");
    this.sqlite.exec(
      `INSERT INTO reporter_score_sums (ip, reporter_id, weight, reports, verified, oldest, newest, floor)
         SELECT r.ip, r.reporter_id, sum(${termSql("r")}), count(*), sum(r.status = 'verified'), min(r.created_at), max(r.created_at), -9007199254740991
           FROM reports r WHERE r.status IN ${COUNTING} GROUP BY r.ip, r.reporter_id`,
    );
    this.sqlite.exec(`INSERT INTO address_category_counts (ip, category, reports) SELECT ip, category, count(*) FROM reports WHERE status IN ${COUNTING} GROUP BY ip, category`);
  }
}

export function scoreSumsOf(store: Pick<Store, "sqlite">): ScoreSums {
  return new ScoreSums(store.sqlite);
}
