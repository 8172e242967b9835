// Following another process's feed changes (a CLI `import blocklist`) in steps (issue 29): the store's entries
// read a keyset page a step, each listed in memory under its feed's version as the store's row says it now, then
// the entries the store no longer has unlisted, a slice of the listings a step; the index takes each step's
// records. A pass that another commit overtook (the feeds' version moved since it began) is followed by another.

import type { Category } from "../../domain/categories";
import { tryParseCidr } from "../../domain/ip";
import type { Severity } from "../../domain/scoring";
import type { FeedTables } from "../../store/feeds";
import type { FeedVersion, ListedNetworks } from "./listed-networks";
import type { ListingMove, ListingStep } from "./listing-step";

/** Store entries a follow step reads: a few milliseconds of work each (2,048 held the loop 30-70 ms beside a million listings, loaded). */
export const FOLLOW_PAGE_ENTRIES = 512;
/** Listing slots a step of the unlisting pass looks at. */
const SLOTS_A_STEP = 16_384;

export interface FollowContext {
  tables: FeedTables;
  listed: ListedNetworks;
  step: ListingStep;
  nowMs: () => number;
  /** The feeds' version (FeedTables.version) the listings stand at. */
  storeVersion: string;
  /** Called when a pass begins: the listings are behind the store until the follow ends. */
  onBehind: () => void;
}

/** Brings the listings and the index up to the store's feeds; returns whether there was anything to follow. */
export function* followSteps(ctx: FollowContext): Generator<void, boolean> {
  // Reads only: a follow never waits for the write lock (its steps write nothing).
  const { tables, listed, step } = ctx;
  let followed = false;
  for (;;) {
    const version = tables.version();
    if (version === ctx.storeVersion) return followed;
    followed = true;
    ctx.onBehind();
    const now = ctx.nowMs();
    // A new version of every feed: an entry the pages do not move to it is one the store no longer lists.
    const targets = new Map<string, FeedVersion>();
    for (const row of tables.list()) targets.set(row.name, listed.newVersion(row.name, { category: row.category as Category, severity: row.severity as Severity, updatedAt: row.updatedAt }));
    let after = { feedName: "", cidr: "" };
    for (;;) {
      const rows = tables.entriesAfter(after.feedName, after.cidr, FOLLOW_PAGE_ENTRIES);
      if (rows.length === 0) break;
      after = rows[rows.length - 1]!;
      const moves: ListingMove[] = [];
      for (const row of rows) {
        const to = targets.get(row.feedName);
        const cidr = tryParseCidr(row.cidr);
        // A feed created after the list was read is taken by the next pass.
        if (to !== undefined && typeof cidr !== "string") moves.push({ feed: row.feedName, cidr, to, write: null });
      }
      step.apply(moves, now, { rescore: false });
      yield;
    }
    for (let slot = 0; slot < listed.slots; ) {
      const moves: ListingMove[] = [];
      for (const end = Math.min(slot + SLOTS_A_STEP, listed.slots); slot < end && moves.length < FOLLOW_PAGE_ENTRIES; slot++) {
        const entry = listed.entryAt(slot);
        if (entry === undefined) continue;
        for (const v of entry.feeds) if (targets.get(v.name) !== v) moves.push({ feed: v.name, cidr: entry.cidr, to: null, write: null });
      }
      if (moves.length > 0) step.apply(moves, now, { rescore: false });
      yield;
    }
    for (const name of [...listed.feeds.keys()]) if (!targets.has(name)) listed.forgetFeed(name);
    ctx.storeVersion = version;
  }
}
