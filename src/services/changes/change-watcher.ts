// Notices commits made by OTHER connections to the database (CLI commands on the same data directory while
// the server runs) and tells the caches that mirror the store. SQLite's `PRAGMA data_version` changes exactly
// when another connection has committed since this connection last looked; polling it costs microseconds.

import { dataVersion } from "../../store/database-health";
import type { Database } from "bun:sqlite";
import { Listeners } from "../../domain/listeners";

export const CHANGE_POLL_INTERVAL_MS = 500;

export type ChangeListener = () => void;

export class ChangeWatcher {
  private readonly listeners = new Listeners("change");
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastVersion: number;

  constructor(
    private readonly sqlite: Database,
    private readonly intervalMs = CHANGE_POLL_INTERVAL_MS,
  ) {
    this.lastVersion = this.version();
  }

  /** Calls `listener` after another connection commits; returns the function that unsubscribes it. */
  onExternalChange(listener: ChangeListener): () => void {
    return this.listeners.add(listener);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.poll(), this.intervalMs);
    // Never the reason a process stays alive.
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Looks once; notifies the listeners and returns true when another connection has committed. */
  poll(): boolean {
    let version: number;
    try {
      version = this.version();
    } catch (error) {
      // Busy or closing: look again at the next tick.
      return false;
    }
    if (version === this.lastVersion) return false;
    this.lastVersion = version;
    this.listeners.emit();
    return true;
  }

  private version(): number {
    return dataVersion(this.sqlite);
  }
}
