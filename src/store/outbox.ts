// The `outbox` table (contract section 7): webhook events written in the transaction of the change that caused
// them, fanned out to subscriptions later by the dispatcher.

import type { Store } from "./database";

/** Writes one event row and returns its id. On the store's connection: inside a transaction, part of it. */
export function insertOutboxEvent(store: Pick<Store, "sqlite">, event: string, json: string, webhookId: number | null, atMs: number): number {
  // query() caches the compiled statement on the connection: this sits on the report-ingest path.
  const row = store.sqlite
    .query<{ id: number }, [string, string, number | null, number]>("INSERT INTO outbox (event, data, webhook_id, created_at) VALUES (?, ?, ?, ?) RETURNING id")
    .get(event, json, webhookId, atMs);
  return row!.id;
}

/** Deletes these events unless some delivery still refers to them. Call inside a transaction. */
export function dropOrphanedEvents(store: Pick<Store, "sqlite">, outboxIds: readonly number[]): void {
  store.sqlite
    .query(
      `DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?))
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.outbox_id = outbox.id)`,
    )
    .run(JSON.stringify(outboxIds));
}
