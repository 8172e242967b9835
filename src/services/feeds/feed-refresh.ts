// Refreshing a scheduled feed (contract 12, "Feeds on a schedule"): download its URL with the validators of the
// last download (If-None-Match, If-Modified-Since) or read its file, and replace its entries. A refresh that
// fails in any way (unreachable, an HTTP error, a timeout, a body too large, a list with no valid entry) keeps
// the entries the feed had and records the error in the feed's status: a broken download never empties a
// blocklist. A 304 keeps the entries and counts as a successful refresh.

import { statSync } from "node:fs";
import type { Category } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { notFound } from "../../domain/errors";
import type { Severity } from "../../domain/scoring";
import type { FeedRow, FeedTables } from "../../store/feeds";
import type { FeedService } from "./feed-service";
import { type FeedParseRequest, parseFeedListInWorker } from "./parse-in-worker";

/** A feed list larger than this is refused (FireHOL's largest lists are a few tens of MB). */
export const FEED_MAX_BYTES = 256 * 1024 * 1024;
export const FEED_FETCH_TIMEOUT_MS = 60_000;

export interface RefreshOutcome {
  feed: string;
  /** "updated": entries replaced; "unchanged": the server said 304; "failed": kept the previous entries. */
  result: "updated" | "unchanged" | "failed";
  entries: number;
  badLines: number;
  error: string | null;
}

export class FeedRefresher {
  constructor(private readonly deps: { tables: FeedTables; feeds: FeedService; clock: Clock; fetch?: typeof fetch }) {}

  async refresh(name: string): Promise<RefreshOutcome> {
    const { tables, clock } = this.deps;
    const feed = tables.get(name);
    if (feed === null) throw notFound(`No feed named ${name}`);
    const at = clock.now();
    try {
      const got = feed.url !== null ? await this.download(feed) : listFile(feed);
      if (got === "not-modified") {
        tables.recordRefresh(name, at, null);
        return { feed: name, result: "unchanged", entries: feed.entryCount, badLines: feed.badLines, error: null };
      }
      // Read, decoded and parsed on a worker thread: a 1 M-line list held the event loop 0.1-0.2 s at a time even
      // in steps (issue 29).
      const list = await parseFeedListInWorker(got.source);
      if (list.entries.length === 0) throw new Error(`the list has no valid entries (${list.lines} lines, ${list.badLines} bad)`);
      const result = await this.deps.feeds.importInTurns(name, list, {
        category: feed.category as Category,
        severity: feed.severity as Severity,
        replace: true,
        source: { url: feed.url, filePath: feed.filePath, schedule: feed.schedule },
      });
      tables.recordRefresh(name, at, null, got.validators);
      return { feed: name, result: "updated", entries: result.entries, badLines: result.badLines, error: null };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      tables.recordRefresh(name, at, message);
      return { feed: name, result: "failed", entries: feed.entryCount, badLines: feed.badLines, error: message };
    }
  }

  private async download(feed: FeedRow): Promise<{ source: FeedParseRequest; validators: { etag: string | null; lastModified: string | null } } | "not-modified"> {
    const headers: Record<string, string> = { "user-agent": "abuse-intel feed refresh", accept: "text/plain, */*" };
    if (feed.etag) headers["if-none-match"] = feed.etag;
    if (feed.lastModified) headers["if-modified-since"] = feed.lastModified;
    let response: Response;
    try {
      response = await (this.deps.fetch ?? fetch)(feed.url as string, { headers, redirect: "follow", signal: AbortSignal.timeout(FEED_FETCH_TIMEOUT_MS) });
    } catch (error) {
      throw new Error(`could not download ${feed.url}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (response.status === 304) return "not-modified";
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`${feed.url} answered HTTP ${response.status}`);
    }
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > FEED_MAX_BYTES) {
      await response.body?.cancel();
      throw new Error(`${feed.url} is larger than ${FEED_MAX_BYTES} bytes`);
    }
    const bytes = await response.arrayBuffer();
    if (bytes.byteLength > FEED_MAX_BYTES) throw new Error(`${feed.url} is larger than ${FEED_MAX_BYTES} bytes`);
    return {
      source: { bytes: new Uint8Array(bytes) },
      validators: { etag: response.headers.get("etag"), lastModified: response.headers.get("last-modified") },
    };
  }
}

/** The list file of `feed` as the worker reads it, once its size is known to be within FEED_MAX_BYTES. */
function listFile(feed: FeedRow): { source: FeedParseRequest; validators: { etag: null; lastModified: null } } {
  const path = feed.filePath as string;
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (size > FEED_MAX_BYTES) throw new Error(`${path} is larger than ${FEED_MAX_BYTES} bytes`);
  return { source: { path }, validators: { etag: null, lastModified: null } };
}
