// The write side of webhook events: producers call enqueueEvent INSIDE the transaction of the change that
// caused the event, so the event commits (or rolls back) with it and a crash loses none (contract section 7).

import { insertOutboxEvent } from "../../store/outbox";
import { type EventInput, type EventKind, eventData } from "../../domain/webhook-payload";
import type { Store } from "../../store/database";

/**
 * Writes one event to the outbox and returns its outbox id. Runs on the store's connection, so inside
 * `inTransaction(store, ...)` it is part of that transaction. `atMs` becomes the body's `timestamp`; `webhookId`
 * restricts the event to one subscription (a ping). The dispatcher fans it out to subscriptions later.
 */
export function enqueueEvent<E extends EventKind>(
  store: Pick<Store, "sqlite">,
  event: E,
  data: EventInput<E>,
  atMs: number,
  webhookId?: number,
): number {
  return insertOutboxEvent(store, event, JSON.stringify(eventData(event, data)), webhookId ?? null, Math.trunc(atMs));
}
