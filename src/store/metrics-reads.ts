// What /metrics reads from the database at scrape time: prepared statements, each an index lookup or small scan.

import type { Store } from "./database";

export interface StoreReads {
  /** Highest id ever given out by an AUTOINCREMENT table: a counter that never goes back, across restarts. */
  sequences(): Map<string, number>;
  deliveriesByStatus(): { status: string; n: number }[];
  outboxWaiting(): number;
}

export function storeReads(store: Pick<Store, "sqlite">): StoreReads {
  const sqlite = store.sqlite;
  const sequences = sqlite.prepare<{ name: string; seq: number }, []>("SELECT name, seq FROM sqlite_sequence WHERE name IN ('reports', 'delivery_attempts', 'threats')");
  const deliveries = sqlite.prepare<{ status: string; n: number }, []>("SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status");
  const outbox = sqlite.prepare<{ n: number }, []>("SELECT count(*) AS n FROM outbox WHERE fanned_out_at IS NULL");
  return {
    sequences: () => new Map(sequences.all().map((r) => [r.name, r.seq])),
    deliveriesByStatus: () => deliveries.all(),
    outboxWaiting: () => outbox.get()?.n ?? 0,
  };
}
