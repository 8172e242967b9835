// The composition root of a server on a data directory: builds every service of one instance, the scheduled
// jobs and what the HTTP layer shares (metrics, blocklists), in dependency order. `serve` and the test harness
// call createServices; nothing else creates singletons.

import { Bouncers } from "../services/bouncers/bouncers";
import { BouncerTables } from "../store/bouncers";
import { DecisionJournalTables } from "../store/decision-journal";
import { type Clock, systemClock } from "../domain/clock";
import { type Config, scoringParametersOf } from "../config";
import { type Store, writeIfUnlocked } from "../store/database";
import { EndedSessions } from "../services/accounts/ended-sessions";
import { type DispatcherOptions, WebhookDispatcher } from "../services/webhooks/dispatcher";
import { WebhookService } from "../services/webhooks/subscriptions";
import { Accounts } from "../services/accounts/accounts";
import { ApiKeys } from "../services/accounts/api-keys";
import { ChangeWatcher } from "../services/changes/change-watcher";
import { Credentials, loadJwtSecret } from "../services/accounts/credentials";
import { LoginThrottle } from "../services/accounts/login-throttle";
import { RATE_FLUSH_INTERVAL_MS, RateLimiter } from "../services/accounts/rate-limiter";
import { createAddressScorer } from "../services/reports/scorer";
import { AddressChangePublisher } from "../services/changes/address-changes";
import { ReportService } from "../services/reports/intake";
import { ReportStateService } from "../services/reports/states";
import { CreditService } from "../services/reports/credits";
import { openEnrichment } from "../services/enrichment/enrichment";
import { IndexSync } from "../services/changes/index-sync";
import { IndexFileWriter } from "../services/changes/index-file-writer";
import { openIndex } from "../services/changes/persisted-index";
import { isFullLength } from "../services/feeds/listing-records";
import { addressRowsAmong } from "../store/address-rows";
import { createAllowlist } from "../services/allowlist/allowlist";
import { createReputation } from "../services/lookups/reputation";
import { ThreatService } from "../services/threats/threats";
import { resolveThreatThresholds, type ThreatThresholds } from "../domain/threat-patterns";
import { createScheduler, type Scheduler } from "../jobs/scheduler";
import { createJobs } from "../jobs/jobs";
import { snapshotExporter } from "../services/snapshots/export";
import type { Services } from "../services/services";
import { Metrics } from "../services/metrics/metrics";
import { BlocklistService } from "../services/blocklists/blocklist";
import { FeedTables } from "../store/feeds";
import { ListedNetworks } from "../services/feeds/listed-networks";
import { FeedService } from "../services/feeds/feed-service";
import { Feeds } from "../services/feeds/feeds";

export interface ServiceOptions {
  config: Config;
  clock: Clock;
  store: Store;
  /**
   * Dispatcher settings. `autoStart` runs its background timer; by default it runs on the real clock (the
   * server) and not with an injected clock (tests, which call `webhookDispatcher.tick()`) nor when serving a
   * read-only snapshot. CLI commands should pass `autoStart: false` and leave delivery to the server.
   */
  webhookDispatcher?: Partial<DispatcherOptions> & { autoStart?: boolean };
  /** Threat detection thresholds; unset ones keep the contract's defaults. */
  threatThresholds?: Partial<ThreatThresholds>;
  /**
   * The index file (`serve`: DATA_DIR/index.bin): read at start when it matches the store, written on stop()
   * and every INDEX_PERSIST_INTERVAL_MS while the index changes. Unset: built from the table, never written.
   */
  indexFile?: string;
  /** How often the index file is written while the index changes (default INDEX_PERSIST_INTERVAL_MS; whole 2 s ticks). */
  indexFileIntervalMs?: number;
}

/** How often a running server writes its index file when the index has changed since the last one. */
export const INDEX_PERSIST_INTERVAL_MS = 10 * 60_000;
/** The housekeeping timer's period: imported enrichment looked for, the change log trimmed, the index file's turn. */
const HOUSEKEEPING_MS = 2_000;

/**
 * How often a credential miss may look for other processes' commits: a flood of bad keys during a long CLI import
 * must not run the external-change listeners on every request.
 */
const CATCH_UP_INTERVAL_MS = 50;

function catchUpAtMost(poll: () => boolean, intervalMs: number): () => boolean {
  let last = Number.NEGATIVE_INFINITY;
  return () => {
    const now = performance.now();
    if (now - last < intervalMs) return false;
    last = now;
    return poll();
  };
}

export async function createServices(options: ServiceOptions): Promise<Services> {
  const { config, clock, store } = options;
  const stoppers: (() => void | Promise<void>)[] = [];
  const changes = new ChangeWatcher(store.sqlite);
  changes.start();
  stoppers.push(() => changes.stop());
  const accounts = new Accounts(store, clock);
  const apiKeys = new ApiKeys(store, clock);
  const loginThrottle = new LoginThrottle(store, clock);
  const credentials = new Credentials(
    { accounts, apiKeys, loginThrottle, clock, catchUp: catchUpAtMost(() => changes.poll(), CATCH_UP_INTERVAL_MS), endedSessions: new EndedSessions(store, clock) },
    loadJwtSecret(config.jwtSecret, config.dataDir),
    config.jwtTtlSeconds,
  );
  const refreshCredentials = () => credentials.refresh();
  accounts.onChange(refreshCredentials);
  apiKeys.onChange(refreshCredentials);
  changes.onExternalChange(refreshCredentials);
  const rateLimiter = new RateLimiter(store, clock);
  rateLimiter.load();
  // Counts and key uses are written in batches; stop() writes the last ones. The batches on the timer are written
  // only when the lock is free (else at the next tick): another process's import must not hold every request
  // for the busy timeout every few seconds. The last ones wait for the lock as any write does (the busy timeout).
  const writeCounts = () => {
    rateLimiter.flush();
    apiKeys.flushUsage();
  };
  const flushCounts = (write: () => void) => {
    try {
      write();
    } catch (error) {
      console.error("writing request counts failed (retried in a few seconds):", error);
    }
  };
  const flushTimer = setInterval(() => flushCounts(() => writeIfUnlocked(store, writeCounts)), RATE_FLUSH_INTERVAL_MS);
  flushTimer.unref?.();
  stoppers.push(() => {
    clearInterval(flushTimer);
    flushCounts(writeCounts);
  });
  const webhookDispatcher = new WebhookDispatcher({ store, clock }, options.webhookDispatcher);
  const webhooks = new WebhookService({ store, clock, onEventQueued: () => webhookDispatcher.nudge() });
  if (options.webhookDispatcher?.autoStart ?? (clock === systemClock && config.snapshot === null)) webhookDispatcher.start();
  stoppers.push(() => webhookDispatcher.stop());
  const scoring = scoringParametersOf(config);
  const feedTables = new FeedTables(store);
  const listedVersion = feedTables.version();
  const listed = ListedNetworks.load(feedTables.list(), feedTables.everyEntry());
  // Bound late: the feed service is made with this scorer, and scores with the listings it keeps current.
  const scorer = createAddressScorer(store, scoring, {
    listingsAround: (ip) => feedService.listingsAround(ip),
    beforeListings: () => feedService.followIfOthersCommitted(),
    rebuildSumsAtMs: clock.now(),
  });
  const enrichment = await openEnrichment({ dataDir: config.dataDir, mmdbPath: config.geoMmdb });
  for (const warning of enrichment.warnings) console.error(`enrichment: ${warning}`);
  const indexFile = options.indexFile;
  let indexSync: IndexSync;
  if (indexFile === undefined) {
    indexSync = IndexSync.build(store, scoring.riskThresholds);
  } else {
    const opened = openIndex(store, scoring.riskThresholds, indexFile);
    indexSync = opened.sync;
    const count = `${opened.sync.index.size} addresses`;
    if (opened.source === "loaded") console.log(`index: loaded from ${indexFile} (${count}, ${opened.replayed} changed since) in ${Math.round(opened.ms)} ms`);
    else console.log(`index: rebuilt from the addresses table (${count}) in ${Math.round(opened.ms)} ms: ${opened.reason}`);
  }
  const index = indexSync.index;
  const addressChanges = new AddressChangePublisher(index);
  const allowlist = createAllowlist(store, clock);
  allowlist.onChange(() => index.touch());
  const reputation = createReputation({ index, geo: enrichment, allowlist, store, clock, scorer, params: scoring, networksAround: (ip) => listed.networksAround(ip) });
  const feedService = new FeedService({ store, tables: feedTables, listed, index, scorer, clock, params: scoring, catchUpIndex: () => indexSync.catchUp(), listedVersion });
  feedService.loadIntoIndex();
  // Timers start with the scheduler (`serve`); CLI commands and tests refresh feeds by hand.
  const feeds = new Feeds({ service: feedService, tables: feedTables, clock });
  stoppers.push(() => feeds.schedule.stop());
  const listings = { candidates: () => [...listed.cidrs()].filter(isFullLength).map((c) => c.network), rowsAmong: addressRowsAmong(store) };
  const indexFileWriter = indexFile === undefined ? null : new IndexFileWriter(store, indexSync, scoring.riskThresholds, indexFile, listings);
  // Registered before the writers' stoppers, so it runs after them: the file holds the last commit. An index
  // unchanged since the file was read leaves it as it is (a commit not yet followed is replayed at the next start).
  stoppers.push(() => indexFileWriter?.writeAtStop());
  // Another process's changes reach the index in slices between requests (see IndexSync.followInSlices).
  stoppers.push(() => indexSync.stopFollowing());
  changes.onExternalChange(() => {
    indexSync.followInSlices();
    allowlist.reload();
    feeds.followExternalChanges();
  });
  // `geo import` writes files, not rows, so imported ranges are looked for on a timer; the log of address
  // changes is trimmed on the same timer, only by the process that keeps the index file (serve): the log is the
  // running server's to read, and another process (`jobs run`) trimming its own recent entries would drop them
  // before the server had followed them, leaving its index stale until the address changed again.
  let ticks = 0;
  const persistEveryTicks = Math.max(1, Math.round((options.indexFileIntervalMs ?? INDEX_PERSIST_INTERVAL_MS) / HOUSEKEEPING_MS));
  const housekeeping = setInterval(() => {
    try {
      if (enrichment.reloadImported()) reputation.clearCache();
      ++ticks;
      if (indexFileWriter !== null) {
        // Trimmed only when the lock is free (see flushCounts): the next tick will do.
        writeIfUnlocked(store, () => indexSync.prune());
        if (ticks % persistEveryTicks === 0) indexFileWriter.writeInBackground();
      }
    } catch (error) {
      console.error("housekeeping failed (retried shortly):", error);
    }
  }, HOUSEKEEPING_MS);
  housekeeping.unref?.();
  stoppers.push(() => clearInterval(housekeeping));
  const onEventQueued = () => webhookDispatcher.nudge();
  const reports = new ReportService({ store, clock, scorer, changes: addressChanges, onEventQueued, duplicateWindowMs: config.duplicateWindowMs });
  const reportStates = new ReportStateService({ store, clock, scorer, params: scoring, changes: addressChanges, onEventQueued });
  const credits = new CreditService(store);
  // Reports still queued for the group commit are written before the store closes.
  stoppers.push(() => reports.flush(true));
  const threats = new ThreatService({
    store,
    clock,
    asnOf: (ip) => enrichment.lookup(ip).asn,
    thresholds: resolveThreatThresholds(options.threatThresholds),
    windowReports: config.threatWindowReports,
    onEventQueued,
  });
  let scheduler: Scheduler;
  try {
    scheduler = createScheduler({
      jobs: createJobs({
        store,
        dataDir: config.dataDir,
        scorer,
        addressChanges,
        reportStates,
        threats,
        snapshotExporter: snapshotExporter({ store, enrichment, scoring, clock }, config.signKey),
      }),
      clock,
      store,
      schedules: config.schedules,
    });
  } catch (error) {
    // A bad --schedule: undo what is already running before the error reaches the command line.
    for (const stop of stoppers.reverse()) await stop();
    throw error;
  }
  // Stopped first (stoppers run in reverse): a run under way finishes before the rest shuts down.
  stoppers.push(() => scheduler.stop());
  const services = {
    config,
    clock,
    store,
    scoring,
    scorer,
    addressChanges,
    reports,
    reportStates,
    credits,
    threats,
    scheduler,
    enrichment,
    index,
    indexSync,
    allowlist,
    reputation,
    feeds,
    webhooks,
    webhookDispatcher,
    accounts,
    apiKeys,
    credentials,
    loginThrottle,
    rateLimiter,
    changes,
    blocklists: new BlocklistService({ index, allowlist, clock, expireDue: () => void reputation.expireDue() }),
    bouncers: new Bouncers({ index, allowlist, clock, expireDue: () => void reputation.expireDue(), tables: new BouncerTables(store), journal: new DecisionJournalTables(store.sqlite, false) }),
    isReady: () => true,
    stop: async () => {
      for (const stop of stoppers.reverse()) await stop();
    },
  } as Omit<Services, "metrics"> as Services;
  // The metrics read the other services when /metrics is asked for.
  services.metrics = new Metrics(services);
  stoppers.push(() => services.metrics.stop());
  return services;
}
