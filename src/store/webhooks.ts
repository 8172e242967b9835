// The `webhooks` table and the delivery log a subscription owns (contract section 7): subscriptions by user,
// and their deliveries with every attempt, for the API.

import { dropOrphanedEvents } from "./outbox";
import { and, count, desc, eq, inArray } from "drizzle-orm";
import type { Store } from "./database";
import { deliveryAttempts, webhookDeliveries, webhooks } from "./schema";

export type WebhookRow = typeof webhooks.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof deliveryAttempts.$inferSelect;

export class WebhookTable {
  constructor(private readonly store: Store) {}

  insert(values: { userId: number; url: string; events: string; secret: string; active: boolean; createdAt: number; updatedAt: number }): WebhookRow {
    return this.store.db.insert(webhooks).values(values).returning().get();
  }

  ofUser(userId: number): WebhookRow[] {
    return this.store.db.select().from(webhooks).where(eq(webhooks.userId, userId)).orderBy(webhooks.id).all();
  }

  /** The subscription if it belongs to the user, else null. */
  owned(userId: number, id: number): WebhookRow | null {
    return this.store.db.select().from(webhooks).where(and(eq(webhooks.id, id), eq(webhooks.userId, userId))).get() ?? null;
  }

  update(id: number, set: Partial<WebhookRow>): WebhookRow {
    return this.store.db.update(webhooks).set(set).where(eq(webhooks.id, id)).returning().get() as WebhookRow;
  }

  /**
   * Deletes the subscription with its deliveries and their attempts, the events no other subscription has a
   * delivery of, and its pings not fanned out yet. Call inside a transaction.
   */
  deleteWithDeliveries(id: number): void {
    const sqlite = this.store.sqlite;
    const outboxIds = sqlite
      .query<{ outbox_id: number }, [number]>("SELECT DISTINCT outbox_id FROM webhook_deliveries WHERE webhook_id = ?")
      .all(id)
      .map((r) => r.outbox_id);
    sqlite.query("DELETE FROM delivery_attempts WHERE delivery_row_id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ?)").run(id);
    sqlite.query("DELETE FROM webhook_deliveries WHERE webhook_id = ?").run(id);
    dropOrphanedEvents(this.store, outboxIds);
    sqlite.query("DELETE FROM outbox WHERE webhook_id = ? AND fanned_out_at IS NULL").run(id);
    this.store.db.delete(webhooks).where(eq(webhooks.id, id)).run();
  }

  /** A page of the subscription's deliveries, newest first, with the total. */
  deliveries(webhookId: number, limit: number, offset: number): { rows: DeliveryRow[]; total: number } {
    const db = this.store.db;
    const total = db.select({ n: count() }).from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, webhookId)).get()!.n;
    const rows = db.select().from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, webhookId)).orderBy(desc(webhookDeliveries.id)).limit(limit).offset(offset).all();
    return { rows, total };
  }

  /** The attempts of these deliveries, in order. */
  attemptsOf(deliveryRowIds: number[]): AttemptRow[] {
    if (deliveryRowIds.length === 0) return [];
    return this.store.db.select().from(deliveryAttempts).where(inArray(deliveryAttempts.deliveryRowId, deliveryRowIds)).orderBy(deliveryAttempts.id).all();
  }
}
