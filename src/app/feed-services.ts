// The feeds feature on a data directory without a server (CLI `import blocklist`, `feed add|list|remove`): the
// index built from the store (to find the reported addresses a change of listings rescores), the listings,
// a scorer that sees them, and the feed services. A running server picks up what these commands commit.
// `import reports` takes only the scorer: its scores count the listings as the server's do.

import { type Config, scoringParametersOf } from "../config";
import type { Clock } from "../domain/clock";
import { IndexSync } from "../services/changes/index-sync";
import { FeedService } from "../services/feeds/feed-service";
import { Feeds } from "../services/feeds/feeds";
import type { FeedImportOptions, FeedImportResult } from "../services/feeds/feed-change";
import { importBlocklistOnce } from "../services/feeds/one-shot-import";
import { ListedNetworks } from "../services/feeds/listed-networks";
import { type AddressScorer, createAddressScorer } from "../services/reports/scorer";
import type { ScoringParameters } from "../domain/scoring";
import type { Store } from "../store/database";
import { FeedTables } from "../store/feeds";

/** `oneShot`: a command that exits after its change (see FeedServiceDeps.indexFollowsListings). */
export function createFeedServices(store: Store, config: Config, clock: Clock, oneShot = false): Feeds {
  const params = scoringParametersOf(config);
  const tables = new FeedTables(store);
  const listedVersion = tables.version();
  const listed = ListedNetworks.load(tables.list(), tables.everyEntry());
  const scorer = createAddressScorer(store, params, { listingsAround: (ip) => listed.listingsAround(ip) });
  const sync = IndexSync.build(store, params.riskThresholds);
  const service = new FeedService({ store, tables, listed, index: sync.index, scorer, clock, params, catchUpIndex: () => sync.catchUp(), listedVersion, indexFollowsListings: !oneShot });
  return new Feeds({ service, tables, clock });
}

/**
 * `import blocklist`'s change, made with what it needs and no more (services/feeds/one-shot-import.ts): the index
 * of the reported addresses, not the listings of every entry.
 */
export function oneShotBlocklistImport(store: Store, config: Config, clock: Clock): (name: string, text: string, options: FeedImportOptions, onProgress?: (linesRead: number) => void) => FeedImportResult {
  const params = scoringParametersOf(config);
  const sync = IndexSync.build(store, params.riskThresholds);
  const deps = { store, tables: new FeedTables(store), index: sync.index, params, clock, catchUpIndex: () => sync.catchUp() };
  return (name, text, options, onProgress) => importBlocklistOnce(deps, name, text, options, onProgress);
}

/**
 * A scorer that counts the feeds' listings as the store holds them now (contract 12), for a command that writes
 * scores without a server. With nothing listed it has no `listingsOf`, so a large import skips the lookups.
 */
export function scorerWithStoredListings(store: Store, params: ScoringParameters): AddressScorer {
  const tables = new FeedTables(store);
  const listed = ListedNetworks.load(tables.list(), tables.everyEntry());
  return createAddressScorer(store, params, listed.size === 0 ? {} : { listingsAround: (ip) => listed.listingsAround(ip) });
}
