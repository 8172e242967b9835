// Console sessions ended by signing out (contract 15): kept in memory for the credential check on every console
// request, and in the store (store/console-session-ends.ts) so a restart does not bring one back.

import type { Clock } from "../../domain/clock";
import type { Store } from "../../store/database";
import { endedConsoleSessions, recordConsoleSessionEnd } from "../../store/console-session-ends";

export class EndedSessions {
  /** Session id → when its token would have expired (ms). */
  private readonly ended: Map<string, number>;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {
    this.ended = endedConsoleSessions(store, clock.now());
  }

  has(sessionId: string): boolean {
    return this.ended.has(sessionId);
  }

  /** Ends session `sessionId` for good (its token expires at `expiresAtMs`). */
  end(sessionId: string, expiresAtMs: number): void {
    const now = this.clock.now();
    recordConsoleSessionEnd(this.store, sessionId, expiresAtMs, now);
    for (const [id, at] of this.ended) if (at <= now) this.ended.delete(id);
    this.ended.set(sessionId, expiresAtMs);
  }
}
