// Feeds (contract section 12): importing a list under a feed's name (adding to it, or replacing it whole),
// removing a feed, following another process's feed changes, and keeping the index in step. A server makes each
// change in steps with a turn of the event loop between them (issue 29: feed-change.ts, feed-follow.ts,
// listing-step.ts), one change at a time; a command that exits after one change makes it at once, in one
// transaction.

import { AppError, notFound } from "../../domain/errors";
import { type FeedList, type ParsedFeedList, parseFeedList } from "../../domain/feed-list";
import type { Listing } from "../../domain/feeds";
import type { Ip } from "../../domain/ip";
import { addressRowsAmong } from "../../store/address-rows";
import { busyError, inTransaction } from "../../store/database";
import { dataVersion } from "../../store/database-health";
import type { FeedTables } from "../../store/feeds";
import { nextTurn } from "../event-loop-turns";
import { type ChangeContext, type FeedImportOptions, type FeedImportResult, importSteps, LOCKED_PAUSE_MS, removeSteps, type Steps } from "./feed-change";
import { type FollowContext, followSteps } from "./feed-follow";
import type { ListedNetworks } from "./listed-networks";
import { putListingsInto } from "./listing-records";
import { ListingStep, type ListingStepDeps } from "./listing-step";

export type { FeedImportOptions, FeedImportResult } from "./feed-change";

/** Addresses scored while the listings were behind the store, rescored a batch a step once they caught up. */
const RESCORE_BATCH = 256;

/** What a ListingStep needs, but the two things the service derives: `rowsAmong` and `indexFollows`. */
export interface FeedServiceDeps extends Omit<ListingStepDeps, "rowsAmong" | "indexFollows"> {
  /**
   * Brings the index up to every row committed so far, another process's too (IndexSync.catchUp): called under
   * the write lock, before each step of a change looks for the reported addresses inside it.
   */
  catchUpIndex: () => void;
  /**
   * False for a command that exits after one change (CLI `import blocklist`): the index, which only finds the
   * reported addresses a change rescores, is not brought in line after it (a million entries took hundreds of MB).
   */
  indexFollowsListings?: boolean;
  /**
   * The feeds' version (FeedTables.version) read before `listed` was loaded: a change another process commits
   * in between is then seen as one at the next look.
   */
  listedVersion: string;
}

export class FeedService {
  private readonly step: ListingStep;
  private readonly followContext: FollowContext;
  private readonly changeContext: ChangeContext;
  /** Called after another process's feed changes were taken in (the schedule follows them). */
  onExternalChangesFollowed: (() => void) | null = null;
  /** The store's data version (dataVersion) when followIfOthersCommitted or a step last looked: it moves when another connection commits. */
  private seenDataVersion: number;
  /** The changes and follows queued or under way, one at a time: the last one's end. */
  private queue: Promise<unknown> = Promise.resolve();
  private pending = 0;
  /** The follow queued or under way, joined by whoever asks for one meanwhile. */
  private following: Promise<void> | null = null;
  /** While the listings are behind the store: the addresses scored meanwhile (with listings that may be old). */
  private scoredWhileBehind: Map<string, Ip> | null = null;
  /** The feeds' version a step's transaction left, read inside it. */
  private versionAtCommit = "";

  constructor(private readonly deps: FeedServiceDeps) {
    const rowsAmong = addressRowsAmong(deps.store);
    this.step = new ListingStep({ ...deps, rowsAmong, indexFollows: deps.indexFollowsListings !== false });
    this.seenDataVersion = dataVersion(deps.store.sqlite);
    this.followContext = {
      tables: deps.tables,
      listed: deps.listed,
      step: this.step,
      nowMs: () => deps.clock.now(),
      storeVersion: deps.listedVersion,
      onBehind: () => void (this.scoredWhileBehind ??= new Map()),
    };
    this.changeContext = {
      store: deps.store,
      tables: deps.tables,
      listed: deps.listed,
      step: this.step,
      follow: () => this.followThenRescore(),
      beforeWrite: () => {
        this.deps.catchUpIndex();
        // Nothing else commits until this step has: the scoring inside it (followIfOthersCommitted) need not look.
        this.seenDataVersion = dataVersion(this.deps.store.sqlite);
        return this.deps.tables.version() === this.followContext.storeVersion;
      },
      // Read before the commit: read after it, another process's commit in between would pass for this one's.
      beforeCommit: () => void (this.versionAtCommit = this.deps.tables.version()),
      afterCommit: () => void (this.followContext.storeVersion = this.versionAtCommit),
    };
  }

  get listed(): ListedNetworks {
    return this.deps.listed;
  }

  /**
   * The listings around `ip` for the scorer. While the listings are behind another process's feed change, the
   * address is noted and rescored once they caught up: a report scored in between keeps no stale score.
   */
  listingsAround(ip: Ip): Listing[] {
    this.scoredWhileBehind?.set(ip.text, ip);
    return this.deps.listed.listingsAround(ip);
  }

  /**
   * Called by the scorer before it scores, inside a write transaction: when another process changed the feeds,
   * a follow starts (in steps, after this turn) and what is scored until it ends is rescored then. Another
   * process's feed change otherwise reaches the listings at the change watcher's next poll, up to 500 ms later.
   * When no other connection has committed (the usual case) this costs one PRAGMA.
   */
  followIfOthersCommitted(): void {
    const version = dataVersion(this.deps.store.sqlite);
    if (version === this.seenDataVersion) return;
    this.seenDataVersion = version;
    if (this.deps.tables.version() === this.followContext.storeVersion) return;
    this.scoredWhileBehind ??= new Map();
    void this.followExternalChanges().catch((error) => console.error("following another process's feed change failed:", error));
  }

  /**
   * Saves a scheduled feed's definition (added or changed) as this service's own change: saved past it, the
   * feeds' version moved, and the next change's catch-up took it for another process's and reloaded every listing.
   */
  saveDefinition(row: Parameters<FeedTables["save"]>[0]): void {
    const { tables } = this.deps;
    inTransaction(this.deps.store, () => {
      // Another process's change not followed yet stays one to follow.
      const unseen = tables.version() !== this.followContext.storeVersion;
      tables.save(row);
      if (!unseen) this.followContext.storeVersion = tables.version();
    });
  }

  /** Reads `text` as a list and imports it at once (see importList). */
  importText(name: string, text: string, options: FeedImportOptions, onProgress?: (linesRead: number) => void): FeedImportResult {
    return this.importList(name, parseFeedList(text, onProgress), options);
  }

  /**
   * Makes a parsed list the feed's entries (replace) or adds them, at once, in one transaction: for a command
   * that exits after it (and tests). A server's requests use importInTurns.
   */
  importList(name: string, list: FeedList, options: FeedImportOptions): FeedImportResult {
    return this.atOnce(() => importSteps(this.changeContext, name, list, options, this.deps.clock.now()));
  }

  /** importList in steps with a turn of the event loop between them, after the changes queued before it. */
  importInTurns(name: string, list: ParsedFeedList, options: FeedImportOptions): Promise<FeedImportResult> {
    return this.followedIfFailed(this.inTurnsQueued(() => importSteps(this.changeContext, name, list, options, this.deps.clock.now())));
  }

  /** Removes a feed and its listings at once (a command; tests). */
  remove(name: string): void {
    if (this.deps.tables.get(name) === null) throw notFound(`No feed named ${name}`);
    this.atOnce(() => removeSteps(this.changeContext, name, this.deps.clock.now()));
  }

  /** remove in steps with a turn of the event loop between them, after the changes queued before it. */
  async removeInTurns(name: string): Promise<void> {
    if (this.deps.tables.get(name) === null) throw notFound(`No feed named ${name}`);
    await this.followedIfFailed(this.inTurnsQueued(() => removeSteps(this.changeContext, name, this.deps.clock.now())));
  }

  /** A change in steps that failed: the step that failed undid its part, and a follow makes sure of the rest. */
  private followedIfFailed<T>(change: Promise<T>): Promise<T> {
    return change.catch((error) => {
      this.followContext.storeVersion = "";
      void this.followExternalChanges().catch((e) => console.error("following the feeds after a failed change failed:", e));
      throw error;
    });
  }

  /**
   * After another process (a CLI import) changed the feeds: the listings and the index's networks and feed-only
   * addresses follow, in steps. The rows that process rescored reach the index through the address change log,
   * as any other change does. Joins the follow already queued or under way (which looks again at its end).
   */
  followExternalChanges(): Promise<void> {
    if (this.following !== null) return this.following;
    if (this.deps.tables.version() === this.followContext.storeVersion && this.scoredWhileBehind === null) return Promise.resolve();
    const follow = this.inTurnsQueued(() => this.followThenRescore()).then(
      () => void (this.following = null),
      (error) => {
        this.following = null;
        throw error;
      },
    );
    this.following = follow;
    return follow;
  }

  /** Whether a change or a follow is queued or under way (the at-once calls refuse to run beside one). */
  get busy(): boolean {
    return this.pending > 0;
  }

  /** Puts every listing into a freshly built index (at start; the rows of reported addresses are already in). */
  loadIntoIndex(): void {
    putListingsInto(this.deps.index, this.deps.listed, this.deps.clock.now(), this.deps.params, addressRowsAmong(this.deps.store));
  }

  /**
   * Follows the store's feeds, then rescores the addresses scored while the listings were behind; again until
   * neither another process's change nor such an address is left (one may come while the last ones are rescored).
   */
  private *followThenRescore(): Steps<boolean> {
    let followed = false;
    for (;;) {
      if (yield* followSteps(this.followContext)) followed = true;
      const noted = this.scoredWhileBehind;
      this.scoredWhileBehind = null;
      if (noted === null || noted.size === 0) {
        if (this.deps.tables.version() === this.followContext.storeVersion) break;
        continue;
      }
      const ips = [...noted.values()];
      for (let i = 0; i < ips.length; i += RESCORE_BATCH) {
        while (!this.step.rescoreAll(ips.slice(i, i + RESCORE_BATCH), this.deps.clock.now())) yield LOCKED_PAUSE_MS;
        yield;
      }
    }
    if (followed) this.onExternalChangesFollowed?.();
    return followed;
  }

  /** Runs a change's steps at once in one transaction; refused beside a change in steps (it cannot wait). */
  private atOnce<T>(steps: () => Steps<T>): T {
    if (this.busy) throw new AppError("busy", "A feed change is under way: try again when it is done");
    try {
      return inTransaction(this.deps.store, () => {
        // Inside this transaction no step waits for the lock: a pause asked would be a step that could not run.
        const run = steps();
        for (;;) {
          const next = run.next();
          if (next.done) return next.value;
          if (typeof next.value === "number") throw busyError();
        }
      });
    } catch (error) {
      // The transaction rolled back what earlier steps had put in the listings: they follow the store again.
      this.resync();
      throw error;
    }
  }

  /** Runs `steps` in turns once the changes queued before have ended; one at a time. */
  private inTurnsQueued<T>(steps: () => Steps<T>): Promise<T> {
    this.pending++;
    const run = this.queue.then(async () => {
      try {
        const running = steps();
        for (;;) {
          const next = running.next();
          if (next.done) return next.value;
          await (typeof next.value === "number" ? Bun.sleep(next.value) : nextTurn());
        }
      } finally {
        this.pending--;
      }
    });
    this.queue = run.catch(() => {});
    return run;
  }

  /** After a failed change made at once: listings and index follow the store (at once: nothing else runs). */
  private resync(): void {
    this.followContext.storeVersion = "";
    this.atOnceOutsideQueue(this.followThenRescore());
  }

  /** Runs steps to their end now, pausing (blocking) only when another process holds the lock. */
  private atOnceOutsideQueue<T>(steps: Steps<T>): T {
    for (;;) {
      const next = steps.next();
      if (next.done) return next.value;
      if (typeof next.value === "number") Bun.sleepSync(next.value);
    }
  }
}
