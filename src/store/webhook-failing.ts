// Which webhook subscriptions' last finished attempt failed (the dispatcher's slots cap them: delivery-slots.ts),
// kept in `meta` as `webhook-failing:<id>` so a restart does not hand hung receivers every slot again until each
// has timed out once more. Written in the transaction that records the attempts, only when a state changes.

import type { Store } from "./database";

const PREFIX = "webhook-failing:";

/** The subscriptions marked failing that still exist. */
export function failingWebhooks(store: Store): number[] {
  const rows = store.sqlite
    .query("SELECT CAST(substr(m.key, ?) AS INTEGER) AS id FROM meta m WHERE m.key >= ? AND m.key < ?")
    .all(PREFIX.length + 1, PREFIX, `${PREFIX}\uffff`) as { id: number }[];
  const exists = store.sqlite.query("SELECT 1 AS found FROM webhooks WHERE id = ?");
  return rows.map((r) => r.id).filter((id) => exists.get(id) !== null);
}

/** Prepared writers of the mark; call inside the transaction that records the attempts. */
export function failingMarkWriters(store: Store) {
  const mark = store.sqlite.prepare<never, [string, string]>("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  const clear = store.sqlite.prepare<never, [string]>("DELETE FROM meta WHERE key = ?");
  return {
    set(webhookId: number, failing: boolean, atMs: number): void {
      if (failing) mark.run(`${PREFIX}${webhookId}`, String(atMs));
      else clear.run(`${PREFIX}${webhookId}`);
    },
  };
}
