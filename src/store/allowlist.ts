// The `allowlist` table (contract section 6): networks never listed on a blocklist.

import { asc, eq } from "drizzle-orm";
import type { Store } from "./database";
import { allowlist } from "./schema";

export type AllowlistRow = typeof allowlist.$inferSelect;

export class AllowlistTable {
  constructor(private readonly store: Store) {}

  all(): AllowlistRow[] {
    return this.store.db.select().from(allowlist).orderBy(asc(allowlist.id)).all();
  }

  byCidr(cidrText: string): AllowlistRow | null {
    return this.store.db.select().from(allowlist).where(eq(allowlist.cidr, cidrText)).get() ?? null;
  }

  insert(values: { cidr: string; note: string; createdAt: number; createdBy: number | null }): AllowlistRow {
    return this.store.db.insert(allowlist).values(values).returning().get();
  }

  /** Deletes by id or by CIDR text; the row deleted, or null. */
  remove(key: { id: number } | { cidr: string }): AllowlistRow | null {
    const where = "id" in key ? eq(allowlist.id, key.id) : eq(allowlist.cidr, key.cidr);
    return this.store.db.delete(allowlist).where(where).returning().get() ?? null;
  }
}
