// Lookups (contract 5.1, 5.2, 5.8, 5.9): every answer comes from the in-memory index and the enrichment table,
// with no SQL per address. The response cache gives the reputation record's `cached` flag its meaning: the
// same address asked again while nothing about it changed.

import { recentAddresses } from "../../store/address-rows";
import type { RecentCursor } from "../../domain/recent-cursor";
import { BulkInputs } from "../../domain/bulk-inputs";
import { categoriesFromMask, categoryAt, type Category } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { ipv4FromNumber, parseIp, tryParseIp, type Ip } from "../../domain/ip";
import { riskLevelFromCode, riskLevelOf, threatLevel, type RiskLevel } from "../../domain/risk";
import { DAY_MS, type ScoringParameters } from "../../domain/scoring";
import { NOT_FOUND } from "../../index/radix-common";
import type { ReputationIndex } from "../../index/reputation-index";
import { inTransaction, type Store } from "../../store/database";
import type { AddressScorer } from "../reports/scorer";
import type { Allowlist } from "../allowlist/allowlist";
import { AnswerCache, lengthOf, NO_ANSWER } from "./answer-cache";
import { ByteScratch } from "./byte-scratch";
import { UnreportedAnswers, type UnreportedGeo } from "./unreported-answers";
import { NO_OWNER_PAIR } from "../enrichment/enrichment";
import type { NetworkView } from "../feeds/listed-networks";

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
  /**
   * The id of an IPv4 address's pair of country code and owner, in one search, when the enrichment can (else a
   * negative number); `ownerPairGeo` tells the pair.
   */
  ownerPairIdOfIpv4?(value: number): number;
  ownerPairGeo?(id: number): UnreportedGeo;
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
  /** Each feed's listing of a network (or the address itself) around this address, widest first (contract 12). */
  networks: NetworkView[];
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
  /** The 5.2 answer (through the answer cache: it counts as a lookup for the `cached` flag). */
  reputation(ip: Ip): ReputationData;
  /** The address's reputation score now (100 when unreported), without touching the answer cache. */
  scoreOf(ip: Ip): number;
  /**
   * The whole body of `GET /v1/ip/{ip}/reputation`, `{"success":true,"data":reputation(ip)}`: UTF-8 bytes from
   * the response cache, or the text of an answer computed now. The bytes are a view good until the next lookup:
   * make the Response (which copies them) or read them at once.
   */
  reputationBody(ip: Ip): string | Uint8Array;
  detail(ip: Ip): IpDetail;
  bulk(inputs: unknown[]): { results: ReputationData[]; invalid: { input: unknown; error: string }[] };
  /**
   * The whole body of `POST /v1/ip/bulk` for these inputs, `{"success":true,"data":bulk(inputs)}`, as UTF-8: a
   * view good until the next lookup, as with reputationBody.
   */
  bulkBody(inputs: BulkInputs): Uint8Array;
  /** A page of the recent list; `next` is the keyset cursor of the page after it (null after the last). */
  recent(limit: number, offset: number, after?: RecentCursor | null): { rows: RecentRow[]; total: number; next: RecentCursor | null };
  /** Rescores the addresses whose oldest counting report passed retention: call before walking the index. */
  expireDue(): number;
  /** Forgets cached answers (after enrichment data changed). */
  clearCache(): void;
  /**
   * Gives the answer cache room for `bytes` of answers before it fills (an edge's new snapshot: see
   * AnswerCache.reserve); what it has now, in bytes.
   */
  reserveAnswerSpace(bytes: number): number;
  /** The listings of networks (or the address itself) around an address, widest first: the detail's `networks`. */
  networksAround(ip: Ip): NetworkView[];
}

/** The body of a 5.2 answer is this, the data object, and "}". */
const BODY_HEAD = '{"success":true,"data":';
const BULK_HEAD = '{"success":true,"data":{"results":[';
const BULK_MIDDLE = '],"invalid":[';
const BULK_TAIL = "]}}";
/** Cached answers kept at most (about 300 bytes each). */
export const CACHE_LIMIT = 200_000;
/**
 * An unreported address's answer written in the scratch (its data object, between the envelope's head and "}"),
 * named by one negative number: cache handles are >= 0 and NO_ANSWER is -1, so a bulk check's answers stay one
 * array of numbers and texts. A data object of SPAN_UNIT bytes or more (an imported owner's name may be of any
 * length) does not fit and is answered as text.
 */
const SPAN_UNIT = 2 ** 21;
const scratchSpan = (start: number, length: number): number => -2 - (start * SPAN_UNIT + length);
const spanStart = (span: number): number => Math.floor((-2 - span) * (1 / SPAN_UNIT));
const spanLength = (span: number): number => -2 - span - spanStart(span) * SPAN_UNIT;
const iso = (ms: number): string | null => (Number.isNaN(ms) ? null : new Date(ms).toISOString());
const utf8 = new TextDecoder();

export function createReputation(deps: {
  index: ReputationIndex;
  geo: GeoLookup;
  allowlist: Allowlist;
  store: Store;
  clock: Clock;
  scorer: AddressScorer;
  params: ScoringParameters;
  /** The listed networks around an address, for the detail record (contract 12); none when not given. */
  networksAround?: (ip: Ip) => NetworkView[];
}): Reputation {
  const { index, geo, allowlist, store, clock, scorer, params } = deps;
  const networksAround = deps.networksAround ?? (() => []);
  const retentionMs = params.retentionDays * DAY_MS;
  // The response cache holds each answer as the body to send with `cached: true` (see answer-cache.ts). The index
  // says whenever an address enters, changes or leaves: the next answer for it must say `cached: false`
  // (reported, then rejected), even when no lookup of it came in between.
  const cache = new AnswerCache(CACHE_LIMIT);
  // Addresses nobody reported (most of what is asked) are answered from a template; only one asked a second time
  // gets a cached answer, so an address asked once costs no entry and no eviction.
  // The template's address is left empty: each answer puts its own in.
  const unreported = new UnreportedAnswers(
    (g) => computeData("", NOT_FOUND, g),
    (id) => geo.ownerPairGeo!(id),
  );
  const scratch = new ByteScratch();
  index.watch((ip) => {
    if (ip !== null) {
      cache.drop(ip);
      unreported.forget(ip);
      return;
    }
    // A listed network answers for every address inside it that has no entry of its own.
    if (cache.size > 0) cache.clear();
    unreported.forgetAsked();
  });

  /** A report past retention stops counting at once, whether or not the expire job has run yet. */
  function freshSlot(ip: Ip, now: number): number {
    const slot = index.answerSlotOf(ip);
    if (slot === NOT_FOUND || !(now - index.firstSeen[slot] > retentionMs)) return slot;
    rescoreNow(ip);
    return index.answerSlotOf(ip);
  }

  function rescoreNow(ip: Ip): void {
    const now = clock.now();
    const record = inTransaction(store, () => scorer.rescore(ip, now));
    if (record) index.upsert(ip, record);
    else index.remove(ip);
  }

  /** The answer's data object, computed from the index and the enrichment (`cached` false). */
  function computeData(ipText: string, slot: number, g: { countryCode: string | null; isp: string | null }): ReputationData {
    const found = slot !== NOT_FOUND;
    const data: ReputationData = {
      ipAddress: ipText,
      reputationScore: found ? index.score[slot] : 100,
      riskLevel: found ? riskLevelFromCode(index.risk[slot]) : riskLevelOf(100, params.riskThresholds),
      totalReports: found ? index.total[slot] : 0,
      verifiedReports: found ? index.verified[slot] : 0,
      categories: found ? categoriesFromMask(index.categories[slot]) : [],
      country: g.countryCode,
      isp: g.isp,
      cached: false,
    };
    return data;
  }

  /** What an unreported address's answer shows of its place: the merged table's pair id where there is one. */
  function unreportedGeo(ip: Ip): GeoInfo | number {
    const id = ip.version === 4 && geo.ownerPairIdOfIpv4 !== undefined ? geo.ownerPairIdOfIpv4(ip.value) : NO_OWNER_PAIR;
    return id === NO_OWNER_PAIR ? geo.lookup(ip) : id;
  }

  /**
   * An unreported address's answer, written in the scratch as a single lookup's whole body; its data object is
   * the span returned (or its text, when too long for a span). Asked once: no cached answer. Asked again: it is
   * worth one (a bulk check's usual list, a busy client).
   */
  function unreportedAnswer(ip: Ip): number | string {
    const start = scratch.at;
    scratch.putAscii(BODY_HEAD);
    const askedBefore = unreported.write(ip, unreportedGeo(ip), scratch);
    const dataEnd = scratch.at;
    scratch.putByte(0x7d); // "}"
    if (askedBefore) cache.set(ip, scratch.view(start, scratch.at), Number.POSITIVE_INFINITY);
    const dataStart = start + BODY_HEAD.length;
    if (dataEnd - dataStart >= SPAN_UNIT) return utf8.decode(scratch.view(dataStart, dataEnd));
    return scratchSpan(dataStart, dataEnd - dataStart);
  }

  /**
   * One address's answer: the handle of its cached body, or, when nothing valid was cached, the data object
   * computed now (with `cached: false`) as JSON text, after caching the body for the next request, or for an
   * unreported address the span of its answer in the scratch (reset it at the start of the request). A cached
   * answer is valid until the address's oldest counting report passes retention (the same test as freshSlot's),
   * an unknown address's until something about it changes in the index.
   */
  function answerOf(ip: Ip, now: number): number | string {
    const hit = cache.of(ip);
    if (hit !== NO_ANSWER) return hit;
    const slot = freshSlot(ip, now);
    if (slot === NOT_FOUND) return unreportedAnswer(ip);
    const expiresAt = index.firstSeen[slot] + retentionMs;
    const data = computeData(ip.text, slot, geo.lookup(ip));
    const answeredNow = JSON.stringify(data);
    data.cached = true;
    cache.set(ip, `${BODY_HEAD}${JSON.stringify(data)}}`, expiresAt);
    return answeredNow;
  }

  function reputationBody(ip: Ip): string | Uint8Array {
    const now = clock.now();
    cache.settle(now);
    scratch.reset();
    const answer = answerOf(ip, now);
    if (typeof answer === "string") return `${BODY_HEAD}${answer}}`;
    if (answer >= 0) return cache.viewOf(answer);
    const start = spanStart(answer);
    return scratch.view(start - BODY_HEAD.length, start + spanLength(answer) + 1);
  }

  /**
   * A bulk check: first every cached answer, in one tight pass so the lookups of different addresses overlap
   * in memory; then, in request order, the single lookup's path for the rest (the second of two equal inputs
   * then finds the answer the first cached); then one body assembled from copies of the cached bytes.
   */
  function bulkBody(inputs: BulkInputs): Uint8Array {
    const now = clock.now();
    cache.settle(now);
    scratch.reset();
    const { count: n, ipv4, others } = inputs;
    // Per input: a cached answer's handle, the JSON of an answer computed now, an unreported answer's span in the
    // scratch, or null for an invalid input.
    const answers: (number | string | null)[] = new Array(n);
    for (let i = 0; i < n; i++) {
      if (ipv4[i] >= 0) {
        answers[i] = cache.ofIpv4(ipv4[i]);
        continue;
      }
      const other = others[i];
      // IPv6 answers are kept under the normalized text: an input written another way is found further down.
      answers[i] = typeof other === "string" ? cache.ofText(other) : NO_ANSWER;
    }
    let invalid = "";
    let size = BULK_HEAD.length + BULK_MIDDLE.length + BULK_TAIL.length + n;
    for (let i = 0; i < n; i++) {
      let answer = answers[i] as number | string; // the first pass left handles and NO_ANSWER only
      if (answer === NO_ANSWER) {
        const input = others[i];
        const parsed = ipv4[i] >= 0 ? ipv4FromNumber(ipv4[i]) : typeof input === "string" ? tryParseIp(input) : "not a string";
        if (typeof parsed === "string") {
          invalid += (invalid === "" ? "" : ",") + JSON.stringify({ input, error: parsed });
          answers[i] = null;
          continue;
        }
        answer = answers[i] = answerOf(parsed, now);
      }
      if (typeof answer === "string") size += Buffer.byteLength(answer, "utf8");
      else size += answer >= 0 ? lengthOf(answer) - BODY_HEAD.length - 1 : spanLength(answer);
    }
    size += Buffer.byteLength(invalid, "utf8");

    cache.beginBody(size);
    cache.putText(BULK_HEAD);
    let first = true;
    for (let i = 0; i < n; i++) {
      const answer = answers[i];
      if (answer === null) continue;
      if (!first) cache.putByte(0x2c); // ","
      first = false;
      if (typeof answer === "string") cache.putText(answer);
      else if (answer >= 0) cache.putAnswer(answer, BODY_HEAD.length, 1);
      else {
        const start = spanStart(answer);
        cache.putSlice(scratch.buffer, start, start + spanLength(answer));
      }
    }
    cache.putText(BULK_MIDDLE);
    cache.putText(invalid);
    cache.putText(BULK_TAIL);
    return cache.takeBody();
  }

  return {
    reputation(ip) {
      const body = reputationBody(ip);
      return (JSON.parse(typeof body === "string" ? body : utf8.decode(body)) as { data: ReputationData }).data;
    },
    reputationBody,
    scoreOf(ip) {
      const slot = freshSlot(ip, clock.now());
      return slot === NOT_FOUND ? 100 : index.score[slot];
    },
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
        networks: networksAround(ip),
      };
    },
    bulk: (inputs) => (JSON.parse(utf8.decode(bulkBody(BulkInputs.of(inputs)))) as { data: ReturnType<Reputation["bulk"]> }).data,
    bulkBody,
    recent(limit, offset, after = null) {
      expireDueNow();
      const page = recentAddresses(store, limit, offset, after);
      const { total } = page;
      const last = page.rows[page.rows.length - 1];
      const next = page.rows.length === limit && last !== undefined ? { lastSeenMs: last.lastSeenMs, ip: last.ip } : null;
      const rows: RecentRow[] = [];
      for (const { ip: text } of page.rows) {
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
      return { rows, total, next };
    },
    expireDue: () => expireDueNow(),
    networksAround,
    clearCache: () => {
      cache.clear();
      unreported.clear();
    },
    reserveAnswerSpace: (bytes) => {
      cache.reserve(bytes);
      return cache.arenaBytes;
    },
  };

  /**
   * Lists (recent, blocklists) walk the whole index, so they cannot rescore each address on the way. Before a
   * walk, addresses whose oldest counting report has passed retention are rescored (contract 5.5: at once), found
   * by a scan of the index's slots that runs only when its earliest firstSeen is past the cutoff.
   */
  function expireDueNow(): number {
    const cutoff = clock.now() - retentionMs;
    if (!(index.earliestFirstSeen < cutoff)) return 0;
    const due = index.expiredAddresses(cutoff);
    for (const ip of due) rescoreNow(ip);
    return due.length;
  }
}

export function notAnAddress(reason: string): AppError {
  return new AppError("bad_request", `Not a valid IP address: ${reason}`);
}
