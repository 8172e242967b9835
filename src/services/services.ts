// The services of one running instance, wired once by the composition root (src/cli/serve.ts) or by a test
// harness. Routes, CLI commands and jobs receive this object and call use cases on it; none of them builds
// its own singletons.

import { type Clock, systemClock } from "../domain/clock";
import { type Config, scoringParametersOf } from "../config";
import type { Store } from "../store/database";
import { type DispatcherOptions, WebhookDispatcher } from "./webhook-dispatcher";
import { WebhookService } from "./webhooks";
import { Accounts } from "./accounts";
import { ApiKeys } from "./api-keys";
import { ChangeWatcher } from "./change-watcher";
import { Credentials, loadJwtSecret } from "./credentials";
import { LoginThrottle } from "./login-throttle";
import { RATE_FLUSH_INTERVAL_MS, RateLimiter } from "./rate-limiter";
import type { ScoringParameters } from "../domain/scoring";
import { type AddressScorer, createAddressScorer } from "./address-scorer";
import { AddressChangePublisher } from "./address-changes";
import { ReportService } from "./reports";
import { ReportStateService } from "./report-states";
import { CreditService } from "./credits";
import { type Enrichment, openEnrichment } from "./enrichment";
import { IndexSync } from "./index-sync";
import type { ReputationIndex } from "../index/reputation-index";
import { type Allowlist, createAllowlist } from "./allowlist";
import { createReputation, type Reputation } from "./reputation";
import { ThreatService } from "./threats";
import { resolveThreatThresholds, type ThreatThresholds } from "../domain/threat-patterns";
import { createScheduler, type Scheduler } from "../jobs/scheduler";
import { createJobs } from "../jobs/jobs";
import { snapshotExporter } from "./snapshots";

export interface Services {
  config: Config;
  clock: Clock;
  store: Store;
  /** Webhook subscriptions of each user (contract section 7). */
  webhooks: WebhookService;
  /** Delivers webhook events; producers may call `nudge()` after committing an event. */
  webhookDispatcher: WebhookDispatcher;
  /** User accounts (contract section 3). */
  accounts: Accounts;
  /** API keys: create, list, revoke (contract section 3). */
  apiKeys: ApiKeys;
  /** Credential → Principal without SQL; access tokens; the login. */
  credentials: Credentials;
  /** The failed-login lockout. */
  loginThrottle: LoginThrottle;
  /** Daily request budgets (contract section 4). */
  rateLimiter: RateLimiter;
  /** Commits by other connections (CLI commands): `changes.onExternalChange(listener)`. */
  changes: ChangeWatcher;
  /** The scoring parameters in force (contract 5.7). */
  scoring: ScoringParameters;
  /** Recomputes one address inside a transaction. */
  scorer: AddressScorer;
  /** After a commit: rescored addresses into the index, then `onAddressChanged` listeners (the response cache). */
  addressChanges: AddressChangePublisher;
  /** Report ingest with group commit (contract 5.4). */
  reports: ReportService;
  /** Community verification, admin verify/reject, expiry (contract 5.5). */
  reportStates: ReportStateService;
  /** Credit balance and ledger reads (contract 5.6). */
  credits: CreditService;
  /** Country, ASN, ISP and city of any address (contract section 10). */
  enrichment: Enrichment;
  /** The in-memory reputation index every lookup and list reads. */
  index: ReputationIndex;
  /** Follows changes other processes committed to `addresses`. */
  indexSync: IndexSync;
  /** Networks never listed on a blocklist (contract section 6). */
  allowlist: Allowlist;
  /** Lookups: detail, reputation, bulk, recent (contract 5.1, 5.2, 5.8, 5.9). */
  reputation: Reputation;
  /** Threat patterns: detection (the detect-threats job) and the list behind GET /v1/threats (contract 9). */
  threats: ThreatService;
  /**
   * The scheduled jobs (contract 9). Created here but not started: `serve` calls `scheduler.start()` once it
   * listens; CLI commands and tests run jobs with `scheduler.runNow(name)`.
   */
  scheduler: Scheduler;
  /** True once the database is open and the index built: what /readyz reports. */
  isReady(): boolean;
  /** Stops timers and background work; the caller closes the store. */
  stop(): Promise<void>;
}

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
  const credentials = new Credentials({ accounts, apiKeys, loginThrottle, clock }, loadJwtSecret(config.jwtSecret, config.dataDir), config.jwtTtlSeconds);
  const refreshCredentials = () => credentials.refresh();
  accounts.onChange(refreshCredentials);
  apiKeys.onChange(refreshCredentials);
  changes.onExternalChange(refreshCredentials);
  const rateLimiter = new RateLimiter(store, clock);
  rateLimiter.load();
  // Counts and key uses are written in batches; stop() writes the last ones.
  const flushCounts = () => {
    try {
      rateLimiter.flush();
      apiKeys.flushUsage();
    } catch (error) {
      console.error("writing request counts failed (retried in a few seconds):", error);
    }
  };
  const flushTimer = setInterval(flushCounts, RATE_FLUSH_INTERVAL_MS);
  flushTimer.unref?.();
  stoppers.push(() => {
    clearInterval(flushTimer);
    flushCounts();
  });
  const webhookDispatcher = new WebhookDispatcher({ store, clock }, options.webhookDispatcher);
  const webhooks = new WebhookService({ store, clock, onEventQueued: () => webhookDispatcher.nudge() });
  if (options.webhookDispatcher?.autoStart ?? (clock === systemClock && config.snapshot === null)) webhookDispatcher.start();
  stoppers.push(() => webhookDispatcher.stop());
  const scoring = scoringParametersOf(config);
  const scorer = createAddressScorer(store, scoring);
  const enrichment = await openEnrichment({ dataDir: config.dataDir, mmdbPath: config.geoMmdb });
  for (const warning of enrichment.warnings) console.error(`enrichment: ${warning}`);
  const indexSync = IndexSync.build(store, scoring.riskThresholds);
  const index = indexSync.index;
  const addressChanges = new AddressChangePublisher(index);
  const allowlist = createAllowlist(store, clock);
  allowlist.onChange(() => index.touch());
  const reputation = createReputation({ index, geo: enrichment, allowlist, store, clock, scorer, params: scoring });
  changes.onExternalChange(() => {
    indexSync.follow();
    allowlist.reload();
  });
  // `geo import` writes files, not rows, so imported ranges are looked for on a timer; the log of address
  // changes is trimmed on the same timer.
  let ticks = 0;
  const housekeeping = setInterval(() => {
    try {
      if (enrichment.reloadImported()) reputation.clearCache();
      if (++ticks % 30 === 0) indexSync.prune();
    } catch (error) {
      console.error("housekeeping failed (retried shortly):", error);
    }
  }, 2000);
  housekeeping.unref?.();
  stoppers.push(() => clearInterval(housekeeping));
  const onEventQueued = () => webhookDispatcher.nudge();
  const reports = new ReportService({ store, clock, scorer, changes: addressChanges, onEventQueued });
  const reportStates = new ReportStateService({ store, clock, scorer, params: scoring, changes: addressChanges, onEventQueued });
  const credits = new CreditService(store);
  // Reports still queued for the group commit are written before the store closes.
  stoppers.push(() => reports.flush(true));
  const threats = new ThreatService({
    store,
    clock,
    asnOf: (ip) => enrichment.lookup(ip).asn,
    thresholds: resolveThreatThresholds(options.threatThresholds),
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
        snapshotExporter: snapshotExporter({ store, enrichment, scoring, clock }),
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
  return {
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
    webhooks,
    webhookDispatcher,
    accounts,
    apiKeys,
    credentials,
    loginThrottle,
    rateLimiter,
    changes,
    isReady: () => true,
    stop: async () => {
      for (const stop of stoppers.reverse()) await stop();
    },
  };
}
