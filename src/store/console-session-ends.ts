// Console sessions signed out before their token expires (contract 15: signing out ends the session), kept in
// `meta` as `console-session-ended:<session id>` (the token's jti) with the token's expiry (ms): a restart does not
// bring one back. Entries past their expiry are pruned when one is added.

import { inTransaction, type Store } from "./database";

const PREFIX = "console-session-ended:";

/** The ended sessions still unexpired at `nowMs`: session id → expiry (ms). */
export function endedConsoleSessions(store: Store, nowMs: number): Map<string, number> {
  const rows = store.sqlite.query("SELECT key, value FROM meta WHERE key >= ? AND key < ?").all(PREFIX, `${PREFIX}\uffff`) as { key: string; value: string }[];
  const ended = new Map<string, number>();
  for (const { key, value } of rows) if (Number(value) > nowMs) ended.set(key.slice(PREFIX.length), Number(value));
  return ended;
}

/** Records that session `sessionId` ended, and drops the entries expired by `nowMs`. */
export function recordConsoleSessionEnd(store: Store, sessionId: string, expiresAtMs: number, nowMs: number): void {
  const { sqlite } = store;
  inTransaction(store, () => {
    sqlite.query("DELETE FROM meta WHERE key >= ? AND key < ? AND CAST(value AS INTEGER) <= ?").run(PREFIX, `${PREFIX}\uffff`, nowMs);
    sqlite.query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(`${PREFIX}${sessionId}`, String(expiresAtMs));
  });
}
