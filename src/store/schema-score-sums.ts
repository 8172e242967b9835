// The running sums of report weights per address and reporter, kept by triggers on `reports` (migrations 0008, 0009) for
// the addresses with many reports, so that scoring one reads one row per reporter instead of every report it ever had.

import { integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Running sums of the counting reports of each address and reporter (contract 5.7 without re-reading the reports):
 * `weight` is Σ severityWeight × (verified ? multiplier : 1) × 2^((created_at − epoch) / halfLife) in the units
 * of `score_sum_params`, so the reporter's current Σw is weight × 2^((epoch − now) / halfLife). Kept by triggers
 * on `reports` (migration 0008) for every writer; reports dated before `floor` are not in the sums (the scorer
 * moves the floor to the retention cutoff, taking out what passed retention). See docs/decisions.md.
 */
export const reporterScoreSums = sqliteTable(
  "reporter_score_sums",
  {
    ip: text("ip").notNull(),
    reporterId: integer("reporter_id").notNull(),
    weight: real("weight").notNull(),
    reports: integer("reports").notNull(),
    verified: integer("verified").notNull(),
    /** No later than the oldest report in the sums (a lower bound after one leaves). */
    oldest: integer("oldest").notNull(),
    /** No earlier than the newest report in the sums (an upper bound after one leaves). */
    newest: integer("newest").notNull(),
    floor: integer("floor").notNull(),
  },
  (t) => [primaryKey({ columns: [t.ip, t.reporterId] })],
);

/**
 * The addresses whose reports are summed (one that had more than a threshold of reports in the retention window
 * when scored): the triggers on `reports` keep the sums of these only, and the scorer reads the reports of the
 * others (at most the threshold), so an ordinary report costs no write beyond its row. See docs/decisions.md.
 */
export const scoreSumAddresses = sqliteTable("score_sum_addresses", {
  ip: text("ip").primaryKey(),
});

/** How many reports in `reporter_score_sums` carry each category, per address: the categories mask without a scan. */
export const addressCategoryCounts = sqliteTable(
  "address_category_counts",
  {
    ip: text("ip").notNull(),
    category: text("category").notNull(),
    reports: integer("reports").notNull(),
  },
  (t) => [primaryKey({ columns: [t.ip, t.category] })],
);

/** The one row of units the running sums are in: the epoch, the half-life and the weights they were summed with. */
export const scoreSumParams = sqliteTable("score_sum_params", {
  id: integer("id").primaryKey(),
  epochMs: integer("epoch_ms").notNull(),
  halfLifeMs: real("half_life_ms").notNull(),
  weight1: real("weight_1").notNull(),
  weight2: real("weight_2").notNull(),
  weight3: real("weight_3").notNull(),
  weight4: real("weight_4").notNull(),
  weight5: real("weight_5").notNull(),
  verifiedMultiplier: real("verified_multiplier").notNull(),
});
