// The primary's record of reports edges forwarded (contract 18, migration 0006).

import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Reports an edge forwarded (contract 18), by the id the edge gave each: a forwarded id is stored at most once, so
 * a batch sent again after a lost answer creates nothing and gets its first results (`result`, JSON) again.
 */
export const forwardedReports = sqliteTable("forwarded_reports", {
  id: text("id").primaryKey(),
  /** The forward key's account the report was credited to. */
  userId: integer("user_id").notNull(),
  result: text("result").notNull(),
  createdAt: integer("created_at").notNull(),
});
