// The running sums of the reports (reporter_score_sums, address_category_counts, score_sum_params, score_sum_addresses;
// migrations 0008, 0009): which addresses are summed, making an address's sums from its reports, their units, what
// one address's sums hold, taking out reports that passed retention, and rebuilding the sums in other units. The
// triggers of migration 0009 keep the summed addresses' sums current on every write to `reports`.

import type { Database } from "bun:sqlite";
import type { Store } from "./database";
import type { CountingReportRow } from "./reports";
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
const NO_FLOOR = -9007199254740991;

/** A report of an address in the retention window, whatever its state (the scorer counts them all to the threshold). */
export interface WindowReportRow extends CountingReportRow {
  ip: string;
}

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
  private readonly summedOne;
  private readonly summedMany;
  private readonly windowOne;
  private readonly windowMany;
  private readonly materialiseStatements;

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
    this.summedOne = sqlite.prepare<{ ip: string }, [string]>("SELECT ip FROM score_sum_addresses WHERE ip = ?");
    this.summedMany = sqlite.prepare<{ ip: string }, [string]>(
      "SELECT j.value AS ip FROM json_each(?) j WHERE EXISTS (SELECT 1 FROM score_sum_addresses s WHERE s.ip = j.value)",
    );
    // Through the (ip, created_at) index; every state, so that rejected reports count towards the threshold too.
    const windowColumns = "ip, id, reporter_id AS reporterId, severity, created_at AS createdAtMs, status, category";
    this.windowOne = sqlite.prepare<WindowReportRow, [string, number]>(`SELECT ${windowColumns} FROM reports WHERE ip = ? AND created_at >= ?`);
    this.windowMany = sqlite.prepare<WindowReportRow, [string, number]>(
      `SELECT ${windowColumns} FROM reports WHERE ip IN (SELECT value FROM json_each(?)) AND created_at >= ?`,
    );
    this.materialiseStatements = [
      sqlite.prepare<never, [string]>("INSERT OR IGNORE INTO score_sum_addresses (ip) VALUES (?)"),
      sqlite.prepare<never, [string]>("DELETE FROM reporter_score_sums WHERE ip = ?"),
      sqlite.prepare<never, [string]>("DELETE FROM address_category_counts WHERE ip = ?"),
      // Each reporter's counting reports from the cutoff on, with the cutoff as its floor (the triggers then leave
      // out a report dated before it, as the scorer's retention would).
      sqlite.prepare<never, [string, number]>(
        `INSERT INTO reporter_score_sums (ip, reporter_id, weight, reports, verified, oldest, newest, floor)
           SELECT r.ip, r.reporter_id, sum(${termSql("r")}), count(*), sum(r.status = 'verified'), min(r.created_at), max(r.created_at), ?2
             FROM reports r WHERE r.ip = ?1 AND r.created_at >= ?2 AND +r.status IN ${COUNTING} GROUP BY r.reporter_id`,
      ),
      sqlite.prepare<never, [string, number]>(
        `INSERT INTO address_category_counts (ip, category, reports)
           SELECT ip, category, count(*) FROM reports WHERE ip = ?1 AND created_at >= ?2 AND +status IN ${COUNTING} GROUP BY category`,
      ),
    ] as const;
  }

  /** Which of these addresses are summed (the others are scored from their reports). */
  summedAmong(ipTexts: readonly string[]): Set<string> {
    const rows = ipTexts.length === 1 ? this.summedOne.all(ipTexts[0]!) : this.summedMany.all(JSON.stringify(ipTexts));
    return new Set(rows.map((r) => r.ip));
  }

  /** The reports of these addresses dated from `cutoffMs` on, in every state. */
  reportsInWindow(ipTexts: readonly string[], cutoffMs: number): WindowReportRow[] {
    return ipTexts.length === 1 ? this.windowOne.all(ipTexts[0]!, cutoffMs) : this.windowMany.all(JSON.stringify(ipTexts), cutoffMs);
  }

  /**
   * Makes the address a summed one: its sums from its counting reports dated from `cutoffMs` on (the retention
   * cutoff at the time it is scored), which the triggers keep from then on. Call inside a transaction, in the
   * units the sums are in.
   */
  materialise(ipText: string, cutoffMs: number): void {
    const [member, dropSums, dropCategories, sumReporters, countCategories] = this.materialiseStatements;
    member.run(ipText);
    dropSums.run(ipText);
    dropCategories.run(ipText);
    sumReporters.run(ipText, cutoffMs);
    countCategories.run(ipText, cutoffMs);
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

  /**
   * Sums every counting report of the summed addresses again in `units` (after the scoring parameters changed).
   * Call inside a transaction.
   */
  rebuild(units: SumUnits): void {
    const w = units.severityWeights;
    this.sqlite
      .prepare("INSERT OR REPLACE INTO score_sum_params VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)")
      .run(units.epochMs, units.halfLifeMs, w[1], w[2], w[3], w[4], w[5], units.verifiedMultiplier);
    this.sqlite.exec("DELETE FROM reporter_score_sums");
    this.sqlite.exec("DELETE FROM address_category_counts");
    this.sqlite.exec(
      `INSERT INTO reporter_score_sums (ip, reporter_id, weight, reports, verified, oldest, newest, floor)
         SELECT r.ip, r.reporter_id, sum(${termSql("r")}), count(*), sum(r.status = 'verified'), min(r.created_at), max(r.created_at), ${NO_FLOOR}
           FROM score_sum_addresses s JOIN reports r ON r.ip = s.ip WHERE +r.status IN ${COUNTING} GROUP BY r.ip, r.reporter_id`,
    );
    this.sqlite.exec(
      `INSERT INTO address_category_counts (ip, category, reports)
         SELECT r.ip, r.category, count(*) FROM score_sum_addresses s JOIN reports r ON r.ip = s.ip WHERE +r.status IN ${COUNTING} GROUP BY r.ip, r.category`,
    );
  }
}

export function scoreSumsOf(store: Pick<Store, "sqlite">): ScoreSums {
  return new ScoreSums(store.sqlite);
}
