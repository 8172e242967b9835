// Timers of the scheduled feeds (contract 12): one croner job per feed with a url or file, on its own pattern
// (seconds as a sixth field allowed; UTC), never overlapping itself. `sync()` follows the feeds table after a
// feed is added or removed, here or by another process.

import { Cron } from "croner";
import type { Clock } from "../../domain/clock";
import { validationFailed } from "../../domain/errors";
import type { FeedTables } from "../../store/feeds";
import type { FeedRefresher } from "./feed-refresh";

export const DEFAULT_FEED_SCHEDULE = "0 * * * *";

/** Throws validation_failed when `pattern` is not a croner pattern. */
export function checkFeedSchedule(pattern: string): string {
  try {
    new Cron(pattern, { timezone: "UTC", paused: true }).stop();
  } catch (error) {
    throw validationFailed([{ field: "schedule", message: `not a cron pattern: ${error instanceof Error ? error.message : String(error)}` }]);
  }
  return pattern;
}

export function nextFeedRefresh(pattern: string | null, nowMs: number): string | null {
  if (pattern === null) return null;
  try {
    return new Cron(pattern, { timezone: "UTC", paused: true }).nextRun(new Date(nowMs))?.toISOString() ?? null;
  } catch {
    return null;
  }
}

export class FeedSchedule {
  private readonly timers = new Map<string, { pattern: string; cron: Cron }>();
  private started = false;

  constructor(private readonly deps: { tables: FeedTables; refresher: FeedRefresher; clock: Clock }) {}

  start(): void {
    this.started = true;
    this.sync();
  }

  /** Starts timers of feeds that have a schedule and none yet, stops those of feeds gone or changed. */
  sync(): void {
    if (!this.started) return;
    const wanted = new Map<string, string>();
    for (const feed of this.deps.tables.list()) if (feed.schedule !== null && (feed.url !== null || feed.filePath !== null)) wanted.set(feed.name, feed.schedule);
    for (const [name, timer] of this.timers) {
      if (wanted.get(name) !== timer.pattern) {
        timer.cron.stop();
        this.timers.delete(name);
      }
    }
    for (const [name, pattern] of wanted) {
      if (this.timers.has(name)) continue;
      const cron = new Cron(
        pattern,
        { timezone: "UTC", protect: true, catch: (error) => console.error(`feed ${name}: refresh failed:`, error) },
        async () => {
          const outcome = await this.deps.refresher.refresh(name);
          if (outcome.error !== null) console.error(`feed ${name}: refresh failed, previous entries kept: ${outcome.error}`);
        },
      );
      this.timers.set(name, { pattern, cron });
    }
  }

  stop(): void {
    this.started = false;
    for (const timer of this.timers.values()) timer.cron.stop();
    this.timers.clear();
  }
}
