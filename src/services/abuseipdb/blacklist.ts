// `blacklist` of AbuseIPDB's API v2 (contract 13): the addresses (and listed networks) at or above a confidence,
// highest confidence first, then most recently reported; allowlisted ones never appear. Read from the same index
// walk as `/v1/ip/blocklist`, so the two lists agree.
//
// Built as the blocklist is: the walk copies the list into compact arrays (a selection) and orders it
// (BlacklistOrder), once per index state and list (confidenceMinimum and ipVersion); every request for that list
// until the index, the allowlist or the enrichment tables change reuses it, applies its own country filters and
// limit, and streams the answer in chunks (blacklist-body.ts). A firewall polling an unchanged list costs the bytes
// it is sent; a stream renders from its own copy, so it is the list of one state whatever changes meanwhile (only
// the countries it has yet to look up come from tables imported meanwhile). `generatedAt` stays the time of the
// request (the list is the current one then; there is no ETag here promising the same bytes).

import type { Clock } from "../../domain/clock";
import { blocklistFilters } from "../../domain/blocklist/query";
import type { IpVersion } from "../../domain/ip";
import type { ReputationIndex } from "../../index/reputation-index";
import type { Allowlist } from "../allowlist/allowlist";
import { SELECTION_STEP_ENTRIES, WALK_ATTEMPTS, selectBlocklist, selectBlocklistInSteps, streamBody } from "../blocklists/blocklist";
import { inTurns, inTurnsWhile, loopPace } from "../event-loop-turns";
import type { Enrichment } from "../enrichment/enrichment";
import { blacklistRenderer } from "./blacklist-body";
import { BlacklistOrder, blacklistOrderInSteps } from "./blacklist-order";
import { countryFilter } from "./country-keys";
import { abuseIpdbTime } from "./wire";

export const DEFAULT_BLACKLIST_LIMIT = 10_000;
export const DEFAULT_CONFIDENCE_MINIMUM = 100;
/**
 * No real maximum (docs/decisions.md): the answer is streamed from the cached list, so a large limit costs only the
 * bytes of the list there is. The bound is what the parameter parser reads (twelve digits).
 */
export const MAX_BLACKLIST_LIMIT = 999_999_999_999;

export interface BlacklistQuery {
  /** 25..100. */
  confidenceMinimum: number;
  /** 1..MAX_BLACKLIST_LIMIT; past the list's length, the whole list. */
  limit: number;
  ipVersion: IpVersion | null;
  /** Upper-case ISO country codes; null when not filtered. */
  onlyCountries: ReadonlySet<string> | null;
  exceptCountries: ReadonlySet<string> | null;
  plaintext: boolean;
}

export interface BlacklistAnswer {
  /** AbuseIPDB's form of the request's time: `meta.generatedAt` and `X-Generated-At`. */
  generatedAt: string;
  /** The whole body when it fits in one chunk, else a stream that renders a chunk per pull. */
  body: Uint8Array | ReadableStream<Uint8Array>;
}

export interface BlacklistDeps {
  index: ReputationIndex;
  allowlist: Pick<Allowlist, "set" | "onChange">;
  /** `rangeTables()` is a new array whenever the tables change (an import): the cached countries go then. */
  enrichment: Pick<Enrichment, "lookup" | "rangeTables">;
  clock: Clock;
  /** Rescores what retention expired, before the list is read (as the blocklist does). */
  expireDue: () => void;
  /** Bytes per streamed chunk (default 64 KiB). */
  chunkSize?: number;
}

/** Lists kept per index state: each holds about 22 bytes an IPv4 entry (22 MB for a million). */
const ORDER_CACHE_LIMIT = 4;

export class Blacklist {
  private allowlistChanges = 0;
  /** The index, allowlist and enrichment state the cached lists were made at. */
  private state = "";
  private enrichmentTables: unknown = null;
  private readonly orders = new Map<string, BlacklistOrder>();
  /** Walks of the index made so far (tests read it). */
  walks = 0;

  constructor(private readonly deps: BlacklistDeps) {
    deps.allowlist.onChange(() => this.allowlistChanges++);
  }

  /**
   * `answer`, with a list not cached at the current state walked and bucketed in steps, a turn of the event loop
   * between two (issue 29: the walk of a million entries held the loop 139 ms); a change during the walk starts it
   * again (see BlocklistService.answerInTurns), so the order is still that of one state. The buckets the request
   * reaches are then sorted (and their countries looked up) in steps too, and the answer renders from that order
   * even when the state moved meanwhile: it is the list of the state the request found.
   */
  async answerInTurns(query: BlacklistQuery): Promise<BlacklistAnswer> {
    const { index, allowlist, enrichment } = this.deps;
    for (let attempt = 1; attempt < WALK_ATTEMPTS; attempt++) {
      this.deps.expireDue();
      this.followState();
      const key = orderKey(query.confidenceMinimum, query.ipVersion);
      if (this.orders.has(key)) break;
      const { state, enrichmentTables } = this;
      const unchanged = () => `${index.generation}.${this.allowlistChanges}` === state && enrichment.rangeTables() === enrichmentTables;
      const pace = loopPace(SELECTION_STEP_ENTRIES);
      const filters = filtersOf(query.confidenceMinimum, query.ipVersion);
      const steps = (function* () {
        return yield* blacklistOrderInSteps(yield* selectBlocklistInSteps(index, allowlist.set, filters, { details: true }, pace), enrichment, pace);
      })();
      const walked = await inTurnsWhile(steps, unchanged);
      if (walked === null || !unchanged() || this.state !== state) continue;
      this.walks++;
      this.keep(key, walked);
    }
    this.deps.expireDue();
    const order = this.order(query.confidenceMinimum, query.ipVersion);
    const countries = countryFilter(query.onlyCountries, query.exceptCountries);
    await inTurns(order.prepareInSteps(query.limit, countries, loopPace(SELECTION_STEP_ENTRIES)));
    return this.answerFrom(order, query, countries);
  }

  /** The answer at once (the walk, the order and the sort of what the request reaches, in this turn). */
  answer(query: BlacklistQuery): BlacklistAnswer {
    this.deps.expireDue();
    return this.answerFrom(this.order(query.confidenceMinimum, query.ipVersion), query, countryFilter(query.onlyCountries, query.exceptCountries));
  }

  private answerFrom(order: BlacklistOrder, query: BlacklistQuery, countries: Uint8Array | null): BlacklistAnswer {
    const generatedAt = abuseIpdbTime(this.deps.clock.now());
    const renderer = blacklistRenderer(order, { limit: query.limit, countries, plaintext: query.plaintext, generatedAt });
    return { generatedAt, body: streamBody(renderer, this.deps.chunkSize) };
  }

  /** The ordered list at the current state, from the cache when nothing changed since it was made. */
  private order(confidenceMinimum: number, ipVersion: IpVersion | null): BlacklistOrder {
    const { index, allowlist, enrichment } = this.deps;
    this.followState();
    const key = orderKey(confidenceMinimum, ipVersion);
    const cached = this.orders.get(key);
    if (cached !== undefined) return cached;
    this.walks++;
    const order = BlacklistOrder.of(selectBlocklist(index, allowlist.set, filtersOf(confidenceMinimum, ipVersion), { details: true }), enrichment);
    this.keep(key, order);
    return order;
  }

  /** Drops the cached lists when the index, the allowlist or the enrichment tables changed since they were made. */
  private followState(): void {
    const state = `${this.deps.index.generation}.${this.allowlistChanges}`;
    const tables = this.deps.enrichment.rangeTables();
    if (state !== this.state || tables !== this.enrichmentTables) {
      this.state = state;
      this.enrichmentTables = tables;
      this.orders.clear();
    }
  }

  private keep(key: string, order: BlacklistOrder): void {
    if (this.orders.size >= ORDER_CACHE_LIMIT) this.orders.delete(this.orders.keys().next().value as string);
    this.orders.set(key, order);
  }
}

const orderKey = (confidenceMinimum: number, ipVersion: IpVersion | null) => `${confidenceMinimum}.${ipVersion ?? 0}`;

/** The confidence bound applies during the walk, so a listed network below it does not hide what it covers. */
const filtersOf = (confidenceMinimum: number, ipVersion: IpVersion | null) => blocklistFilters({ minimumRisk: "LOW", ipVersion, maximumScore: 100 - confidenceMinimum });
