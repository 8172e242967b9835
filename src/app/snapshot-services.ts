// The second composition (contract section 8): the services of `abuse-intel serve --snapshot FILE`, answering
// lookups, bulk checks, recent addresses, threats and blocklists from a snapshot, read-only. The lookup services
// are the server's own (createReputation, the blocklist routes over the index and allowlist, ThreatService's
// listing); everything that writes is a stand-in that refuses with 503 read_only (the HTTP layer refuses
// writing requests before they reach a route, see src/http/read-only.ts). API keys are the static ones given
// with --api-key or ABUSE_INTEL_API_KEYS: a snapshot carries no accounts.

import type { Enrichment } from "../services/enrichment/enrichment";
import { readSnapshotBlobsInWorker } from "../services/snapshots/snapshot-blobs";
import { Bouncers, type CursorKeeper } from "../services/bouncers/bouncers";
import { randomBytes } from "node:crypto";
import type { Config } from "../config";
import { type Clock, systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import type { Principal } from "../domain/principal";
import { resolveThreatThresholds } from "../domain/threat-patterns";
import { Credentials, type CredentialsDeps } from "../services/accounts/credentials";
import type { Services } from "../services/services";
import { type ForwardingGauges, Metrics } from "../services/metrics/metrics";
import { BlocklistService } from "../services/blocklists/blocklist";
import { openSnapshotInSteps, type OpenedSnapshot } from "../services/snapshots/sources";
import { ThreatService } from "../services/threats/threats";
import { inTurns, nextTurn } from "../services/event-loop-turns";

/** Every static key authenticates as this: no account, so no daily budget to count against. */
const STATIC_PRINCIPAL: Principal = Object.freeze({
  userId: 0,
  email: "",
  role: "user",
  tier: "enterprise",
  dailyBudget: null,
  via: "static_key",
  apiKeyId: null,
});

// Bun's hasher, not node:crypto's createHash: that one allocated a stream object per request (24 collections per
// 300,000 lookups against none), and every lookup of a snapshot server or edge hashes its key (issue 29).
const digest = (key: string) => Bun.SHA256.hash(key, "hex") as unknown as string;

const readOnlyError = (what: string) =>
  new AppError("read_only", `This server answers from a read-only snapshot: ${what} is not available here`);

/**
 * Credentials of a snapshot server: the configured keys, compared by SHA-256; any bearer value is taken as a
 * key (there are no users, so no access tokens). Logins and tokens are refused.
 */
export class StaticKeyCredentials extends Credentials {
  /** The principal of each configured key, by the key's digest. */
  private readonly principals: Map<string, Principal>;

  constructor(keys: readonly string[]) {
    // The base class reads accounts and keys from a store on refresh(), which is overridden to do nothing.
    super({ clock: systemClock } as unknown as CredentialsDeps, randomBytes(32), 1);
    this.principals = new Map(keys.map((key) => digest(key)).map((d) => [d, Object.freeze({ ...STATIC_PRINCIPAL, staticKey: d.slice(0, 16) })]));
  }

  override refresh(): void {}

  override byApiKey(key: string): Principal | null {
    return this.principals.get(digest(key)) ?? null;
  }

  override byDecisionsKey(key: string): Principal | null {
    return this.byApiKey(key);
  }

  /** No accounts here: no token of any kind is anyone's. */
  protected override byToken(): Principal | null {
    return null;
  }

  override byBearer(value: string): Principal | null {
    return this.byApiKey(value);
  }

  override async issueToken(): Promise<never> {
    throw readOnlyError("issuing access tokens");
  }

  override async login(): Promise<never> {
    throw readOnlyError("logging in");
  }
}

/**
 * A stand-in for a service a snapshot server does not have: every method refuses with read_only, except
 * listener registration (`onChange`, `onAddressChanged`…), which is accepted and never fires: nothing changes.
 */
function refusing<T>(name: string): T {
  return new Proxy(Object.create(null) as object, {
    get(_target, property) {
      if (typeof property === "symbol" || property === "then") return undefined;
      if (/^on[A-Z]/.test(property) || property === "stop" || property === "flush") return () => {};
      return () => {
        throw readOnlyError(`${name}.${property}`);
      };
    },
  }) as T;
}

export interface SnapshotServiceOptions {
  config: Config;
  clock?: Clock;
  /** The bouncers' cursors, when they must outlive these services (an edge's swaps); default: their own, in memory. */
  bouncerCursors?: CursorKeeper;
  /** An edge that takes reports: its forward queue, for /metrics. */
  forwarding?: ForwardingGauges;
  /** The enrichment of the snapshot served until now: kept when the new one carries the same range tables. */
  previousEnrichment?: Enrichment;
}

export interface SnapshotServices extends Services {
  snapshot: OpenedSnapshot;
}

/** Opens `config.snapshot` and wires the read-only services over it. */
export async function createSnapshotServices(options: SnapshotServiceOptions): Promise<SnapshotServices> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  if (config.snapshot === null) throw new AppError("bad_request", "no snapshot file given (--snapshot FILE)");
  const keys = config.apiKeys.filter((k) => k.length > 0);
  if (keys.length === 0) {
    throw new AppError("bad_request", "serve --snapshot needs at least one API key: --api-key KEY (repeatable) or ABUSE_INTEL_API_KEYS=KEY1,KEY2");
  }
  // An edge opens the next snapshot while it serves the last: a turn of the event loop between the pieces of the
  // work (each blob and tree of the index, the listings, each range table, the rest) lets its requests through (issue 29).
  // Its blobs (tens of MiB, which SQLite hands over slowly) are read on a worker thread when one can be started.
  const blobs = (await readSnapshotBlobsInWorker(config.snapshot)) ?? undefined;
  const snapshot = await inTurns(openSnapshotInSteps(config.snapshot, { mmdbPath: config.geoMmdb, sameTablesAs: options.previousEnrichment, blobs }));
  try {
    await nextTurn();
    // A server reads the range tables now rather than on its first lookup.
    const enrichment = await inTurns(snapshot.enrichmentInSteps());
    await nextTurn();
    // Listing reads the snapshot's `threats` table; detection (which needs reports) never runs here: there is
    // no scheduler, and ThreatService prepares its detection statements only on a first run.
    const threats = new ThreatService({
      store: snapshot.store,
      clock: snapshot.clock,
      asnOf: (ip) => enrichment.lookup(ip).asn,
      thresholds: resolveThreatThresholds(),
    });
    const services = {
      snapshot,
      config,
      clock,
      store: snapshot.store,
      scoring: snapshot.scoring,
      enrichment,
      index: snapshot.index,
      allowlist: snapshot.allowlist,
      reputation: snapshot.reputation,
      threats,
      credentials: new StaticKeyCredentials(keys),
      webhooks: refusing("webhooks"),
      webhookDispatcher: refusing("webhookDispatcher"),
      accounts: refusing("accounts"),
      apiKeys: refusing("apiKeys"),
      loginThrottle: refusing("loginThrottle"),
      rateLimiter: refusing("rateLimiter"),
      changes: refusing("changes"),
      scorer: refusing("scorer"),
      addressChanges: refusing("addressChanges"),
      reports: refusing("reports"),
      reportStates: refusing("reportStates"),
      credits: refusing("credits"),
      indexSync: refusing("indexSync"),
      scheduler: refusing("scheduler"),
      feeds: refusing("feeds"),
      bouncers: new Bouncers({
        index: snapshot.index,
        allowlist: snapshot.allowlist,
        clock,
        expireDue: () => void snapshot.reputation.expireDue(),
        tables: null,
        cursors: options.bouncerCursors,
      }),
      blocklists: new BlocklistService({
        index: snapshot.index,
        allowlist: snapshot.allowlist,
        clock,
        expireDue: () => void snapshot.reputation.expireDue(),
      }),
      isReady: () => true,
      stop: async () => services.metrics.stop(),
      forwarding: options.forwarding,
    } as Omit<SnapshotServices, "metrics"> as SnapshotServices;
    services.metrics = new Metrics(services);
    return services;
  } catch (error) {
    snapshot.close();
    throw error;
  }
}
