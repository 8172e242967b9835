// The services of one running instance, as routes, CLI commands and jobs see them. Built once by a composition
// root (src/app/create-services.ts for a data directory, src/app/snapshot-services.ts for a snapshot) or by a
// test harness; none of the users builds its own singletons.

import type { Bouncers } from "./bouncers/bouncers";
import type { Clock } from "../domain/clock";
import type { Config } from "../config";
import type { ScoringParameters } from "../domain/scoring";
import type { Store } from "../store/database";
import type { ReputationIndex } from "../index/reputation-index";
import type { Accounts } from "./accounts/accounts";
import type { ApiKeys } from "./accounts/api-keys";
import type { Credentials } from "./accounts/credentials";
import type { LoginThrottle } from "./accounts/login-throttle";
import type { RateLimiter } from "./accounts/rate-limiter";
import type { Allowlist } from "./allowlist/allowlist";
import type { BlocklistService } from "./blocklists/blocklist";
import type { AddressChangePublisher } from "./changes/address-changes";
import type { ChangeWatcher } from "./changes/change-watcher";
import type { IndexSync } from "./changes/index-sync";
import type { Enrichment } from "./enrichment/enrichment";
import type { Feeds } from "./feeds/feeds";
import type { Reputation } from "./lookups/reputation";
import type { ForwardingGauges, Metrics } from "./metrics/metrics";
import type { CreditService } from "./reports/credits";
import type { ReportService } from "./reports/intake";
import type { AddressScorer } from "./reports/scorer";
import type { ReportStateService } from "./reports/states";
import type { Scheduler } from "./scheduled-jobs";
import type { ThreatService } from "./threats/threats";
import type { WebhookDispatcher } from "./webhooks/dispatcher";
import type { WebhookService } from "./webhooks/subscriptions";

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
  /**
   * After a commit: rescored addresses into the index. The answer cache hears of every change from the index
   * alone (ReputationIndex.watch), whichever way it came: reports, report states,
   * rescoring, feeds, another process's commits.
   */
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
  /** Feeds and listed networks: imports, replaces, removal (contract 12). */
  feeds: Feeds;
  /** Firewall bouncers and their pulls of the decisions stream (contract 14). */
  bouncers: Bouncers;
  /** Lookups: detail, reputation, bulk, recent (contract 5.1, 5.2, 5.8, 5.9). */
  reputation: Reputation;
  /** Threat patterns: detection (the detect-threats job) and the list behind GET /v1/threats (contract 9). */
  threats: ThreatService;
  /**
   * The scheduled jobs (contract 9). Created here but not started: `serve` calls `scheduler.start()` once it
   * listens; CLI commands and tests run jobs with `scheduler.runNow(name)`.
   */
  scheduler: Scheduler;
  /** Request counters and the /metrics exposition. */
  metrics: Metrics;
  /** Blocklists with their ETags and cached selections (contract 5.10). */
  blocklists: BlocklistService;
  /** True once the database is open and the index built: what /readyz reports. */
  isReady(): boolean;
  /** Stops timers and background work; the caller closes the store. */
  stop(): Promise<void>;
  /** An edge that takes reports: its forward queue (contract 18). */
  forwarding?: ForwardingGauges;
}

