// The outbox fan-out and the delivery log as the dispatcher works them (contract section 7): unfanned events,
// the subscriptions that receive them, due deliveries, attempts, and pruning finished deliveries.

import { dropOrphanedEvents } from "./outbox";
import type { EventKind } from "../domain/webhook-payload";
import type { Store } from "./database";

export interface OutboxEvent {
  id: number;
  event: EventKind;
  data: string;
  webhook_id: number | null;
  created_at: number;
}

export interface DueDelivery {
  rowId: number;
  deliveryId: string;
  webhookId: number;
  event: EventKind;
  body: string;
  attempts: number;
  url: string;
  secret: string;
}

export class DeliveryTables {
  constructor(private readonly store: Pick<Store, "sqlite">) {}

  /** A plain read: whether any event waits to be fanned out. */
  hasUnfannedEvents(): boolean {
    return this.store.sqlite.query("SELECT 1 FROM outbox WHERE fanned_out_at IS NULL LIMIT 1").get() !== null;
  }

  unfannedEvents(limit: number): OutboxEvent[] {
    return this.store.sqlite
      .query<OutboxEvent, [number]>("SELECT id, event, data, webhook_id, created_at FROM outbox WHERE fanned_out_at IS NULL ORDER BY id LIMIT ?")
      .all(limit);
  }

  /** Active subscriptions of enabled accounts (a disabled account's webhooks must not keep receiving events). */
  receivingSubscriptions(): { id: number; events: string }[] {
    return this.store.sqlite
      .query<{ id: number; events: string }, []>(
        `SELECT w.id, w.events FROM webhooks w JOIN users u ON u.id = w.user_id
          WHERE w.active = 1 AND u.disabled = 0 ORDER BY w.id`,
      )
      .all();
  }

  /** The writers of one fan-out, inside its transaction. */
  fanOutWriters() {
    const sqlite = this.store.sqlite;
    return {
      insertDelivery: sqlite.query<unknown, [string, number, number, string, string, number, number, number]>(
        `INSERT INTO webhook_deliveries (delivery_id, outbox_id, webhook_id, event, body, status, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
      ),
      markFannedOut: sqlite.query<unknown, [number, number]>("UPDATE outbox SET fanned_out_at = ? WHERE id = ?"),
      /** Deletes the events of these ids (a JSON array): those nobody receives, in one statement per fan-out. */
      dropEvents: sqlite.query<unknown, [string]>("DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?))"),
    };
  }

  /**
   * Deletes up to `batch` delivered or failed deliveries last changed before `cutoffMs`, with their attempts and
   * the outbox rows left without deliveries. Call inside a transaction; returns how many deliveries went.
   */
  pruneFinished(cutoffMs: number, batch: number): number {
    const sqlite = this.store.sqlite;
    const ids = sqlite
      .query<{ id: number }, [number, number]>("SELECT id FROM webhook_deliveries WHERE status != 'pending' AND updated_at < ? ORDER BY id LIMIT ?")
      .all(cutoffMs, batch)
      .map((r) => r.id);
    if (ids.length === 0) return 0;
    const list = JSON.stringify(ids);
    sqlite.query("DELETE FROM delivery_attempts WHERE delivery_row_id IN (SELECT value FROM json_each(?))").run(list);
    const outboxIds = sqlite
      .query<{ outbox_id: number }, [string]>("SELECT DISTINCT outbox_id FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?))")
      .all(list)
      .map((r) => r.outbox_id);
    sqlite.query("DELETE FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?))").run(list);
    dropOrphanedEvents(this.store, outboxIds);
    return ids.length;
  }

  /** Pending deliveries due at `nowMs`, oldest first, leaving out those in flight and the subscriptions named. */
  due(nowMs: number, inFlight: number[], leftOutWebhooks: number[], limit: number): DueDelivery[] {
    return this.store.sqlite
      .query<DueDelivery, [number, string, string, number]>(
        `SELECT d.id AS rowId, d.delivery_id AS deliveryId, d.webhook_id AS webhookId, d.event AS event, d.body AS body,
                d.attempts AS attempts, w.url AS url, w.secret AS secret
           FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN users u ON u.id = w.user_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND w.active = 1 AND u.disabled = 0
            AND d.id NOT IN (SELECT value FROM json_each(?))
            AND d.webhook_id NOT IN (SELECT value FROM json_each(?))
          ORDER BY d.next_attempt_at, d.id
          LIMIT ?`,
      )
      .all(nowMs, JSON.stringify(inFlight), JSON.stringify(leftOutWebhooks), limit);
  }

  /** The writers of finished attempts, inside their transaction. */
  attemptWriters() {
    const sqlite = this.store.sqlite;
    return {
      /** Records an attempt's outcome on a still-pending delivery; 0 changes when it is gone or done. */
      updateDelivery: sqlite.query<unknown, [string, number, number, number | null, string | null, number, number]>(
        `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, last_error = ?, updated_at = ?
          WHERE id = ? AND status = 'pending'`,
      ),
      insertAttempt: sqlite.query<unknown, [number, number, number | null, string | null, number]>(
        "INSERT INTO delivery_attempts (delivery_row_id, attempted_at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?)",
      ),
    };
  }
}
