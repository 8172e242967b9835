// Lookups (contract 5.1, 5.2, 5.8, 5.9): every answer comes from the in-memory index and the enrichment table,
// with no SQL per address. The response cache gives the reputation record's `cached` flag its meaning: the
// same address asked again while nothing about it changed.

import { categoriesFromMask, categoryAt, type Category } from "../domain/categories";
import type { Clock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { ipFromWords, ipv4FromNumber, parseIp, tryParseIp, type Ip } from "../domain/ip";
import { riskLevelFromCode, riskLevelOf, threatLevel, type RiskLevel } from "../domain/risk";
import { DAY_MS, type ScoringParameters } from "../domain/scoring";
import { NOT_FOUND } from "../index/radix-common";
import type { ReputationIndex } from "../index/reputation-index";
import { inTransaction, type Store } from "../store/database";
import type { AddressScorer } from "./address-scorer";
import type { Allowlist } from "./allowlist";

/** What the enrichment knows of an address (country, network owner, city). */
export interface GeoInfo {
  countryCode: string | null;
  country: string | null;
  asn: number | null;
  isp: string | null;
  city: string | null;
}

export interface GeoLookup {
  lookup(ip: Ip): GeoInfo;
}

/** `data` of `GET /v1/ip/{ip}/reputation` (5.2) and of each bulk result (5.9). */
export interface ReputationData {
  ipAddress: string;
  reputationScore: number;
  riskLevel: RiskLevel;
  totalReports: number;
  verifiedReports: number;
  categories: Category[];
  country: string | null;
  isp: string | null;
  cached: boolean;
}

/** `GET /v1/ip/{ip}` (5.1): flat, no envelope. */
export interface IpDetail {
  success: true;
  ip: string;
  country: string | null;
  countryCode: string | null;
  city: string | null;
  isp: string | null;
  asn: number | null;
  reports: number;
  verifiedReports: number;
  threatLevel: string;
  abuse_confidence: number;
  reputationScore: number;
  categories: Category[];
  firstSeen: string | null;
  lastSeen: string | null;
  isAllowlisted: boolean;
}

export interface RecentRow {
  ipAddress: string;
  lastReportedAt: string | null;
  category: Category | null;
  categories: Category[];
  totalReports: number;
  reputationScore: number;
  riskLevel: RiskLevel;
  country: string | null;
}

export interface Reputation {
  reputation(ip: Ip): ReputationData;
  /**
   * The whole body of `GET /v1/ip/{ip}/reputation`, `{"success":true,"data":reputation(ip)}`, as JSON text: what
   * the route sends, from the response cache without building an object or a string per request.
   */
  reputationBody(ip: Ip): string;
  detail(ip: Ip): IpDetail;
  bulk(inputs: unknown[]): { results: ReputationData[]; invalid: { input: unknown; error: string }[] };
  /** `bulk(inputs)` as JSON text. */
  bulkJson(inputs: unknown[]): string;
  recent(limit: number, offset: number): { rows: RecentRow[]; total: number };
  /** Rescores the addresses whose oldest counting report passed retention: call before walking the index. */
  expireDue(): number;
  /** Forgets cached answers (after enrichment data changed). */
  clearCache(): void;
}

/** The body of a 5.2 answer is this, the data object, and "}". */
const BODY_HEAD = '{"success":true,"data":';
/** Cached answers kept at most, for reported and for unknown addresses each. */
const CACHE_LIMIT = 100_000;
const EXPIRY_WALK_INTERVAL_MS = 10_000;
const iso = (ms: number): string | null => (Number.isNaN(ms) ? null : new Date(ms).toISOString());

export function createReputation(deps: {
  index: ReputationIndex;
  geo: GeoLookup;
  allowlist: Allowlist;
  store: Store;
  clock: Clock;
  scorer: AddressScorer;
  params: ScoringParameters;
}): Reputation {
  const { index, geo, allowlist, store, clock, scorer, params } = deps;
  const retentionMs = params.retentionDays * DAY_MS;
  // The response cache holds each answer as the body to send (with `cached: true`), so a cached answer costs no
  // object and no serialization. Reported addresses are cached by index slot, valid while the slot's stamp is the
  // one cached (every change to a slot, and every reuse of a freed slot, gives a new stamp); unknown addresses by
  // their text.
  let slotBody: (string | undefined)[] = [];
  let slotStamp: number[] = [];
  let slotCount = 0;
  const unknownBody = new Map<string, string>();
  // An address that enters the index makes its cached "unknown" answer stale, even when no lookup of it came
  // in between (reported, then rejected: the next answer must say `cached: false`).
  index.onAddressAdded = (ip) => {
    if (unknownBody.size > 0) unknownBody.delete(ip.text);
  };
  let lastExpiryWalk = Number.NEGATIVE_INFINITY;

  /** A report past retention stops counting at once, whether or not the expire job has run yet. */
  function freshSlot(ip: Ip, now: number): number {
    const slot = index.slotOf(ip);
    if (slot === NOT_FOUND || !(now - index.firstSeen[slot] > retentionMs)) return slot;
    rescoreNow(ip);
    return index.slotOf(ip);
  }

  function rescoreNow(ip: Ip): void {
    const now = clock.now();
    const record = inTransaction(store, () => scorer.rescore(ip, now));
    if (record) index.upsert(ip, record);
    else index.remove(ip);
  }

  /** The answer's body, computed from the index and the enrichment. */
  function computeBody(ip: Ip, slot: number, cached: boolean): string {
    const g = geo.lookup(ip);
    const found = slot !== NOT_FOUND;
    const data: ReputationData = {
      ipAddress: ip.text,
      reputationScore: found ? index.score[slot] : 100,
      riskLevel: found ? riskLevelFromCode(index.risk[slot]) : riskLevelOf(100, params.riskThresholds),
      totalReports: found ? index.total[slot] : 0,
      verifiedReports: found ? index.verified[slot] : 0,
      categories: found ? categoriesFromMask(index.categories[slot]) : [],
      country: g.countryCode,
      isp: g.isp,
      cached,
    };
    // One JSON.stringify makes one flat string, which is sent (and copied into bulk answers) without first being
    // pieced together.
    return JSON.stringify({ success: true, data });
  }

  /** The body for one address; a computed answer is serialized twice, with `cached` false now and true for later. */
  function lookupBody(ip: Ip, now: number): string {
    const slot = freshSlot(ip, now);
    if (slot === NOT_FOUND) {
      const hit = unknownBody.get(ip.text);
      if (hit !== undefined) return hit;
      if (unknownBody.size >= CACHE_LIMIT) unknownBody.delete(unknownBody.keys().next().value as string);
      unknownBody.set(ip.text, computeBody(ip, slot, true));
      return computeBody(ip, slot, false);
    }
    const stamp = index.stamp[slot];
    if (slot < slotBody.length) {
      const hit = slotBody[slot];
      if (hit !== undefined && slotStamp[slot] === stamp) return hit;
    }
    cacheSlot(slot, stamp, computeBody(ip, slot, true));
    return computeBody(ip, slot, false);
  }

  function cacheSlot(slot: number, stamp: number, body: string): void {
    if (slotCount >= CACHE_LIMIT && (slot >= slotBody.length || slotBody[slot] === undefined)) clearSlots();
    if (slot >= slotBody.length) {
      // Grown densely (never by assigning past the end), so the arrays stay plain vectors.
      const length = Math.max(slot + 1, slotBody.length * 2, 1024);
      while (slotBody.length < length) {
        slotBody.push(undefined);
        slotStamp.push(Number.NaN);
      }
    }
    if (slotBody[slot] === undefined) slotCount++;
    slotBody[slot] = body;
    slotStamp[slot] = stamp;
  }

  function clearSlots(): void {
    slotBody = [];
    slotStamp = [];
    slotCount = 0;
  }

  function reputationBody(ip: Ip): string {
    return lookupBody(ip, clock.now());
  }

  function bulkJson(inputs: unknown[]): string {
    const now = clock.now();
    const results: string[] = [];
    let invalid = "";
    for (const input of inputs) {
      const parsed = typeof input === "string" ? tryParseIp(input) : "not a string";
      if (typeof parsed === "string") invalid += (invalid === "" ? "" : ",") + JSON.stringify({ input, error: parsed });
      else results.push(lookupBody(parsed, now).slice(BODY_HEAD.length, -1));
    }
    return `{"results":[${results.join(",")}],"invalid":[${invalid}]}`;
  }

  return {
    reputation: (ip) => (JSON.parse(reputationBody(ip)) as { data: ReputationData }).data,
    reputationBody,
    detail(ip) {
      const slot = freshSlot(ip, clock.now());
      const g = geo.lookup(ip);
      const score = slot === NOT_FOUND ? 100 : index.score[slot];
      return {
        success: true,
        ip: ip.text,
        country: g.country,
        countryCode: g.countryCode,
        city: g.city,
        isp: g.isp,
        asn: g.asn,
        reports: slot === NOT_FOUND ? 0 : index.total[slot],
        verifiedReports: slot === NOT_FOUND ? 0 : index.verified[slot],
        threatLevel: threatLevel(slot === NOT_FOUND ? riskLevelOf(100, params.riskThresholds) : riskLevelFromCode(index.risk[slot])),
        abuse_confidence: 100 - score,
        reputationScore: score,
        categories: slot === NOT_FOUND ? [] : categoriesFromMask(index.categories[slot]),
        firstSeen: slot === NOT_FOUND ? null : iso(index.firstSeen[slot]),
        lastSeen: slot === NOT_FOUND ? null : iso(index.lastSeen[slot]),
        isAllowlisted: allowlist.contains(ip),
      };
    },
    bulk: (inputs) => JSON.parse(bulkJson(inputs)) as ReturnType<Reputation["bulk"]>,
    bulkJson,
    recent(limit, offset) {
      expireDueNow();
      const total = (store.sqlite.query("SELECT count(*) AS n FROM addresses").get() as { n: number }).n;
      const ips = store.sqlite
        .query("SELECT ip FROM addresses ORDER BY last_seen DESC, ip ASC LIMIT ? OFFSET ?")
        .all(limit, offset) as { ip: string }[];
      const rows: RecentRow[] = [];
      for (const { ip: text } of ips) {
        const ip = parseIp(text);
        const slot = index.slotOf(ip);
        if (slot === NOT_FOUND) continue;
        const last = index.lastCategory[slot];
        rows.push({
          ipAddress: ip.text,
          lastReportedAt: iso(index.lastSeen[slot]),
          category: last === 255 ? null : categoryAt(last),
          categories: categoriesFromMask(index.categories[slot]),
          totalReports: index.total[slot],
          reputationScore: index.score[slot],
          riskLevel: riskLevelFromCode(index.risk[slot]),
          country: geo.lookup(ip).countryCode,
        });
      }
      return { rows, total };
    },
    expireDue: () => expireDueNow(),
    clearCache() {
      clearSlots();
      unknownBody.clear();
    },
  };

  /**
   * Lists (recent, blocklists) walk the whole index, so they cannot rescore each address on the way. Before a
   * walk, addresses whose oldest counting report has passed retention are rescored, found with one walk that
   * runs only when the index's earliest firstSeen is past the cutoff, and then at most every 10 seconds.
   */
  function expireDueNow(): number {
    const now = clock.now();
    const cutoff = now - retentionMs;
    if (!(index.earliestFirstSeen < cutoff) || now - lastExpiryWalk < EXPIRY_WALK_INTERVAL_MS) return 0;
    lastExpiryWalk = now;
    const due: Ip[] = [];
    let earliest = Number.POSITIVE_INFINITY;
    const visit = (slot: number, ipOf: () => Ip) => {
      const first = index.firstSeen[slot];
      if (first < cutoff) due.push(ipOf());
      else if (first < earliest) earliest = first;
    };
    index.v4.walk((network, _len, slot) => visit(slot, () => ipv4FromNumber(network)));
    index.v6.walk((network, _len, slot) => visit(slot, () => ipFromWords(network)));
    index.earliestFirstSeen = earliest;
    for (const ip of due) rescoreNow(ip);
    return due.length;
  }
}

export function notAnAddress(reason: string): AppError {
  return new AppError("bad_request", `Not a valid IP address: ${reason}`);
}
