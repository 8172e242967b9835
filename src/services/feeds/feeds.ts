// The feeds feature as routes and commands use it (contract 12): one-off imports, scheduled feeds (add, list,
// remove, refresh now) and their timers. The work is done by FeedService (entries and the index),
// FeedRefresher (downloads) and FeedSchedule (timers).

import { type Category, parseCategory } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { parseFeedName, parseFeedSeverity, parseFeedSource } from "../../domain/feeds";
import type { Severity } from "../../domain/scoring";
import type { FeedList } from "../../domain/feed-list";
import type { FeedRow, FeedTables } from "../../store/feeds";
import type { FeedImportOptions, FeedImportResult, FeedService } from "./feed-service";
import { type RefreshOutcome, FeedRefresher } from "./feed-refresh";
import { parseFeedListInWorker } from "./parse-in-worker";
import { checkFeedSchedule, DEFAULT_FEED_SCHEDULE, FeedSchedule, nextFeedRefresh } from "./feed-schedule";

export interface FeedDefinition {
  name: string;
  category: Category;
  severity: Severity;
  url: string | null;
  filePath: string | null;
  schedule: string;
}

/** A feed as `feed list` and `GET /v1/admin/feeds` show it. */
export interface FeedView {
  name: string;
  category: Category;
  severity: number;
  entries: number;
  source: { url: string } | { file: string } | null;
  schedule: string | null;
  updatedAt: string;
  lastRefreshAt: string | null;
  lastError: string | null;
  badLines: number;
  nextRefreshAt: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Parses the settings of a scheduled feed as the API and the CLI take them. */
export function parseFeedDefinition(input: Record<string, unknown>): FeedDefinition {
  const name = parseFeedName(input.name);
  const category = parseCategory(input.category);
  const severity = parseFeedSeverity(input.severity);
  const { url, filePath } = parseFeedSource(input.url, input.file);
  const schedule = checkFeedSchedule(typeof input.schedule === "string" && input.schedule !== "" ? input.schedule : DEFAULT_FEED_SCHEDULE);
  return { name, category, severity, url, filePath, schedule };
}

export class Feeds {
  readonly refresher: FeedRefresher;
  readonly schedule: FeedSchedule;

  constructor(private readonly deps: { service: FeedService; tables: FeedTables; clock: Clock; fetch?: typeof fetch }) {
    this.refresher = new FeedRefresher({ tables: deps.tables, feeds: deps.service, clock: deps.clock, fetch: deps.fetch });
    this.schedule = new FeedSchedule({ tables: deps.tables, refresher: this.refresher, clock: deps.clock });
    deps.service.onExternalChangesFollowed = () => this.schedule.sync();
  }

  get service(): FeedService {
    return this.deps.service;
  }

  /** A one-off import under `name`, made at once in one transaction (a command; tests): see importTextInTurns for a server. */
  importText(name: string, text: string, options: FeedImportOptions, onProgress?: (linesRead: number) => void): FeedImportResult {
    return this.deps.service.importText(parseFeedName(name), text, options, onProgress);
  }

  /** importText for a server (`POST /v1/admin/feeds/{name}`): parsed on a worker thread, changed in steps between requests (issue 29). */
  async importTextInTurns(name: string, text: string, options: FeedImportOptions): Promise<FeedImportResult> {
    const feed = parseFeedName(name);
    const list = await parseFeedListInWorker({ text });
    return this.deps.service.importInTurns(feed, list, options);
  }

  /** A one-off import of a list already parsed, made at once in one transaction (a command; tests). */
  importList(name: string, list: FeedList, options: FeedImportOptions): FeedImportResult {
    return this.deps.service.importList(parseFeedName(name), list, options);
  }

  /** Adds (or changes) a scheduled feed and refreshes it once now; a failed first refresh is recorded, not thrown. */
  async add(definition: FeedDefinition): Promise<{ feed: FeedView; refresh: RefreshOutcome }> {
    const { tables, clock } = this.deps;
    const existing = tables.get(definition.name);
    if (existing !== null && existing.url === null && existing.filePath === null) {
      throw new AppError("bad_request", `${definition.name} holds a one-off import; remove it first or pick another name`);
    }
    this.deps.service.saveDefinition({
      name: definition.name,
      category: definition.category,
      severity: definition.severity,
      entryCount: existing?.entryCount ?? 0,
      updatedAt: existing?.updatedAt ?? clock.now(),
      url: definition.url,
      filePath: definition.filePath,
      schedule: definition.schedule,
      badLines: existing?.badLines ?? 0,
    });
    const refresh = await this.refresher.refresh(definition.name);
    this.schedule.sync();
    return { feed: this.view(tables.get(definition.name) as FeedRow), refresh };
  }

  list(): FeedView[] {
    return this.deps.tables.list().map((row) => this.view(row));
  }

  get(name: string): FeedView | null {
    const row = this.deps.tables.get(name);
    return row === null ? null : this.view(row);
  }

  /** Removes a feed at once (a command; tests). */
  remove(name: string): void {
    this.deps.service.remove(name);
    this.schedule.sync();
  }

  /** Removes a feed in steps between requests (the admin API and console). */
  async removeInTurns(name: string): Promise<void> {
    await this.deps.service.removeInTurns(name);
    this.schedule.sync();
  }

  refresh(name: string): Promise<RefreshOutcome> {
    return this.refresher.refresh(name);
  }

  /** After another process changed feeds: listings, index and timers follow, in steps; never rejects (logs). */
  followExternalChanges(): Promise<void> {
    return this.deps.service.followExternalChanges().catch((error) => console.error("following another process's feed change failed:", error));
  }

  private view(row: FeedRow): FeedView {
    return {
      name: row.name,
      category: row.category as Category,
      severity: row.severity,
      entries: row.entryCount,
      source: row.url !== null ? { url: row.url } : row.filePath !== null ? { file: row.filePath } : null,
      schedule: row.schedule,
      updatedAt: new Date(row.updatedAt).toISOString(),
      lastRefreshAt: iso(row.lastRefreshAt),
      lastError: row.lastError,
      badLines: row.badLines,
      nextRefreshAt: row.url !== null || row.filePath !== null ? nextFeedRefresh(row.schedule, this.deps.clock.now()) : null,
    };
  }
}
