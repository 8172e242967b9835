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
