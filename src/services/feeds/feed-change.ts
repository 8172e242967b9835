// A feed import, replace or removal in steps (issue 29): the feed's row first (its new settings, marked "under
// way"), then the list's entries a chunk a step, each moved to the feed's new version (inserted if new), then the
// feed's other entries (dropped by a replace or a removal, moved by an add), then the row's entry count with the
// mark cleared. Each step is its own short transaction (ListingStep); when another process changed the feeds in
// between, the listings follow it and the change starts again (what it already did is then a no-op).

import type { Category } from "../../domain/categories";
import { AppError } from "../../domain/errors";
import type { FeedListError, ParsedFeedList } from "../../domain/feed-list";
import type { Severity } from "../../domain/scoring";
import { inTransaction, type Store, unlessLocked } from "../../store/database";
import type { FeedRow, FeedTables } from "../../store/feeds";
import type { FeedVersion, ListedNetworks } from "./listed-networks";
import type { ListingMove, ListingStep, StepOutcome } from "./listing-step";

/**
 * A change's steps yield between steps; a number yielded asks for a pause of that many milliseconds first: another
 * process holds the write lock, and the step is tried again after it (see StepResult).
 */
export type Steps<T> = Generator<number | void, T>;

/** The pause before a step tries again for the write lock another process holds. */
export const LOCKED_PAUSE_MS = 25;

export interface FeedImportOptions {
  category: Category;
  severity: Severity;
  /** Replace the feed's entries (true) or add to them. */
  replace: boolean;
  /** A scheduled feed's source and schedule, kept with it; one-off imports leave them null. */
  source?: { url: string | null; filePath: string | null; schedule: string | null };
}

export interface FeedImportResult {
  feed: string;
  /** Entries the list held (distinct). */
  imported: number;
  /** Entries the feed lists now. */
  entries: number;
  lines: number;
  badLines: number;
  /** The first bad lines, with their numbers. */
  errors: FeedListError[];
  /** Reported addresses rescored because a listing around them changed. */
  rescored: number;
}

/**
 * Entries a step moves at most; fewer when the step's rescoring and records cost more (see nextLimit). 512 was tried
 * (issue 29): the late ticks stayed as many (they are the index's growth) and a 1 M-line refresh took 2-3× as long.
 */
export const STEP_ENTRIES = 1024;
/** A rescore costs about as much as this many moved entries (it reads the address's sums and writes its row). */
const RESCORE_COST = 16;

export interface ChangeContext {
  store: Store;
  tables: FeedTables;
  listed: ListedNetworks;
  step: ListingStep;
  /** Follows other processes' feed changes (in steps) before the change begins or begins again. */
  follow: () => Steps<unknown>;
  /** Inside each step's transaction, first: false when another process changed the feeds since the last step. */
  beforeWrite: () => boolean;
  /** Last inside each step's transaction: notes the feeds' version the step leaves. */
  beforeCommit: () => void;
  /** After each step's commit: the feeds' version the listings stand at moves with this change. */
  afterCommit: () => void;
}

const underWay = (what: string, nowMs: number) =>
  `${what} under way in steps since ${new Date(nowMs).toISOString()}; if this stays, the server stopped during it and the feed lists part of the change: the next refresh or the same import again completes it`;

/** The moves of the next step's size, and that size after this step's cost (entries moved, records, rescores). */
function nextLimit(limit: number, moved: number, out: StepOutcome): number {
  const cost = moved + out.touched + RESCORE_COST * out.rescored;
  if (cost <= STEP_ENTRIES) return Math.min(STEP_ENTRIES, limit * 2);
  return Math.max(16, Math.floor((limit * STEP_ENTRIES) / cost));
}

/** Runs `write` in its own transaction after beforeWrite (after a pause while locked); false (nothing written) when the feeds moved. */
function* writeStep(ctx: ChangeContext, write: () => void): Steps<boolean> {
  for (;;) {
    const done = unlessLocked(ctx.store, () =>
      inTransaction(ctx.store, () => {
        if (!ctx.beforeWrite()) return false;
        write();
        ctx.beforeCommit();
        return true;
      }),
    );
    if (done === null) {
      yield LOCKED_PAUSE_MS;
      continue;
    }
    if (done) ctx.afterCommit();
    return done;
  }
}

/**
 * Moves `moves` a step at a time (the step shrinks when its rescoring costs more); false when another process's
 * change stopped it (the caller follows and begins again).
 */
function* moveInSteps(ctx: ChangeContext, next: (limit: number) => ListingMove[] | null, nowMs: number, counted: { rescored: number }): Steps<boolean> {
  let limit = STEP_ENTRIES;
  for (;;) {
    const moves = next(limit);
    if (moves === null) return true;
    if (moves.length === 0) {
      yield;
      continue;
    }
    let out = ctx.step.apply(moves, nowMs, { rescore: true, beforeWrite: ctx.beforeWrite, beforeCommit: ctx.beforeCommit });
    while (out === "locked") {
      yield LOCKED_PAUSE_MS;
      out = ctx.step.apply(moves, nowMs, { rescore: true, beforeWrite: ctx.beforeWrite, beforeCommit: ctx.beforeCommit });
    }
    if (out === "overtaken") return false;
    ctx.afterCommit();
    counted.rescored += out.rescored;
    limit = nextLimit(limit, moves.length, out);
    yield;
  }
}

/**
 * The feed's entries listed under another version than `keep` (all of them when `keep` is null), a step's worth
 * at a time from the listings' slots, as moves made by `moveOf`; null when the walk is done.
 */
function otherEntries(listed: ListedNetworks, feed: string, keep: FeedVersion | null, moveOf: (e: { cidr: ListingMove["cidr"] }) => ListingMove): (limit: number) => ListingMove[] | null {
  let slot = 0;
  return (limit) => {
    if (slot >= listed.slots) return null;
    const moves: ListingMove[] = [];
    // Slots looked at are bounded too: a feed with few entries among many others walks them in steps.
    for (const end = Math.min(listed.slots, slot + 16 * STEP_ENTRIES); slot < end && moves.length < limit; slot++) {
      const entry = listed.entryAt(slot);
      if (entry === undefined) continue;
      const v = entry.feeds.find((f) => f.name === feed);
      if (v !== undefined && v !== keep) moves.push(moveOf(entry));
    }
    return moves;
  };
}

/** Makes a parsed list the feed's entries (replace) or adds them, in steps. A replace with nothing parsed is refused. */
export function* importSteps(ctx: ChangeContext, name: string, list: ParsedFeedList, options: FeedImportOptions, nowMs: number): Steps<FeedImportResult> {
  const { tables, listed } = ctx;
  if (list.entries.length === 0 && options.replace) {
    throw new AppError("bad_request", `The list has no valid entries (${list.badLines} bad lines): a replace would empty feed ${name}, so nothing was changed`);
  }
  for (;;) {
    yield* ctx.follow();
    const previous = tables.get(name);
    const started = yield* writeStep(ctx, () => {
      // The feed row first (its entries reference it), with the count it had until the change is done.
      tables.save(feedRowOf(name, options, previous, nowMs, previous?.entryCount ?? 0, list.badLines));
      tables.markChangeUnderWay(name, underWay(options.replace ? "a replace" : "an import", nowMs));
    });
    if (!started) continue;
    const version = listed.newVersion(name, { category: options.category, severity: options.severity, updatedAt: nowMs });
    const counted = { rescored: 0 };
    let i = 0;
    const ofList = (limit: number): ListingMove[] | null => {
      if (i >= list.entries.length) return null;
      const moves: ListingMove[] = [];
      // Entries looked at are bounded too: started again, most of the list is already moved.
      for (const end = Math.min(list.entries.length, i + 16 * STEP_ENTRIES); i < end && moves.length < limit; i++) {
        const cidr = list.entries.at(i)!;
        const before = listed.versionAt(name, cidr);
        if (before !== version) moves.push({ feed: name, cidr, to: version, write: before === undefined ? "insert" : null });
      }
      return moves;
    };
    if (!(yield* moveInSteps(ctx, ofList, nowMs, counted))) continue;
    let kept = 0;
    const others = otherEntries(listed, name, version, ({ cidr }) => {
      if (options.replace) return { feed: name, cidr, to: null, write: "delete" };
      kept++;
      return { feed: name, cidr, to: version, write: null };
    });
    if (!(yield* moveInSteps(ctx, others, nowMs, counted))) continue;
    const entries = list.entries.length + kept;
    if (!(yield* writeStep(ctx, () => tables.markChangeDone(name, entries)))) continue;
    return { feed: name, imported: list.entries.length, entries, lines: list.lines, badLines: list.badLines, errors: list.errors, rescored: counted.rescored };
  }
}

/** Removes a feed and its listings, in steps: its entries go a chunk a step, then its row. */
export function* removeSteps(ctx: ChangeContext, name: string, nowMs: number): Steps<void> {
  const { tables, listed } = ctx;
  for (;;) {
    yield* ctx.follow();
    if (tables.get(name) === null) throw new AppError("not_found", `No feed named ${name}`);
    if (!(yield* writeStep(ctx, () => tables.markChangeUnderWay(name, underWay("a removal", nowMs))))) continue;
    const gone = otherEntries(listed, name, null, ({ cidr }) => ({ feed: name, cidr, to: null, write: "delete" }));
    if (!(yield* moveInSteps(ctx, gone, nowMs, { rescored: 0 }))) continue;
    if (!(yield* writeStep(ctx, () => tables.remove(name)))) continue;
    listed.forgetFeed(name);
    return;
  }
}

function feedRowOf(name: string, options: FeedImportOptions, previous: FeedRow | null, now: number, entryCount: number, badLines: number) {
  const source = options.source ?? { url: previous?.url ?? null, filePath: previous?.filePath ?? null, schedule: previous?.schedule ?? null };
  return { name, category: options.category, severity: options.severity, entryCount, updatedAt: now, url: source.url, filePath: source.filePath, schedule: source.schedule, badLines };
}
