// Blocklists (contract 5.10 and 6): which addresses a request lists, taken from one ordered walk of the index;
// the strong ETag that lets a firewall's poll of an unchanged list end in a 304 at the cost of a lookup; and the
// rendered body, streamed in chunks so a list of a million addresses is never held whole in memory.
//
// Consistency while streaming: reports keep arriving while a client pulls a long list, and the radix trees must
// not change under a walk. So the walk runs at once, synchronously (nothing else runs in between), and copies
// what matches into a compact selection: 4 bytes per IPv4 entry, 16 per IPv6 entry (plus 12 per entry of score,
// risk, categories and lastSeen for csv, the one format that prints them). The stream renders from that copy, so
// every response is the list as it was at one generation of the index, whatever happens meanwhile. Selections
// are cached per filter until the index changes, so repeated downloads of an unchanged list skip the walk.
//
// ETag: derived, never hashed from the output: an id of this server process (generations restart at 1 with the
// process), the index generation (bumped on every change of an address and by allowlist changes), a counter of
// this service's own allowlist notifications (so the tag stays right however the index is wired), the
// normalized filters and the format. A strong tag promises the same bytes, so `generatedAt` is not the time of
// the request but the time this server first saw the list's current state: the same tag always goes with the
// same body.

import { compareWords, lastOfIpv6Network } from "../../domain/ip";
import { type Clock, isoTime } from "../../domain/clock";
import { type BlocklistFilters, type BlocklistFormat, type BlocklistParams, filtersKey, parseBlocklistParams } from "../../domain/blocklist/query";
import { type BlocklistCursor, type BlocklistRenderer, CONTENT_TYPES, createRenderer } from "../../domain/blocklist/formats";
import { ChunkWriter } from "../../domain/blocklist/chunk-writer";
import type { RiskCode } from "../../domain/risk";
import type { CidrSet } from "../../index/cidr-set";
import type { ReputationIndex } from "../../index/reputation-index";
import type { Allowlist } from "../allowlist/allowlist";
import { entryMatches } from "./membership";
import { Pace } from "../../domain/pace";
import { allAtOnce } from "../../domain/steps";
import { inTurnsWhile, loopPace, nextTurn } from "../event-loop-turns";

/** The entries of one list, copied out of the index: IPv4 first, then IPv6, each ascending. */
export interface BlocklistSelection {
  readonly count: number;
  readonly v4Count: number;
  /** IPv4 addresses (or networks) as unsigned numbers; `v4Count` of them. */
  readonly v4: Uint32Array;
  /** Prefix lengths of the IPv4 entries, or null when all are /32. */
  readonly v4Prefix: Uint8Array | null;
  readonly v6Count: number;
  /** Four words per IPv6 entry. */
  readonly v6: Uint32Array;
  /** Prefix lengths of the IPv6 entries, or null when all are /128. */
  readonly v6Prefix: Uint8Array | null;
  /** Score, risk, categories and lastSeen of every entry (IPv4 ones first), when asked for. */
  readonly details: SelectionDetails | null;
}

export interface SelectionDetails {
  score: Uint8Array;
  risk: Uint8Array;
  categories: Uint16Array;
  lastSeen: Float64Array;
}

/** Whether a format prints more than the addresses. */
export const needsDetails = (format: BlocklistFormat): boolean => format === "csv";

/**
 * Walks the index once, in order, and copies the entries the filters list: risk at least the minimum, any of the
 * asked categories, the asked family, not allowlisted. Synchronous; the index must not change during the call
 * (nothing else runs in between). Used by the API and by the offline CLI on an index built from a snapshot.
 *
 * Listed networks (contract 12): a network entry (prefix shorter than /32 or /128) that is listed covers the
 * entries inside it, which are then left out, because the network's own line covers them and nftables interval
 * sets refuse overlapping elements. The walk visits a network before the addresses in it, so one "covered up to"
 * mark per family does it. A listed network that allowlisted networks overlap is cut into the blocks outside
 * them (none when one holds it all): allowlisted addresses never appear (contract 5.10), and the rest of the
 * network stays listed.
 */
export function selectBlocklist(index: ReputationIndex, allowlist: CidrSet, filters: BlocklistFilters, options: { details?: boolean } = {}): BlocklistSelection {
  return allAtOnce(selectBlocklistInSteps(index, allowlist, filters, options, new Pace(Infinity)));
}

/** Index entries a step of the walk looks at: a few milliseconds, so a million-entry list yields some hundred times. */
export const SELECTION_STEP_ENTRIES = 8192;

/**
 * selectBlocklist a step at a time: yields after every `pace` step of entries walked. The index must not change
 * between two steps (the caller checks its generation and walks again when it moved).
 */
export function* selectBlocklistInSteps(
  index: ReputationIndex,
  allowlist: CidrSet,
  filters: BlocklistFilters,
  options: { details?: boolean },
  pace: Pace,
): Generator<void, BlocklistSelection> {
  const risk = index.risk;
  const categories = index.categories;
  const score = index.score;
  const capacity4 = filters.ipVersion === 6 ? 0 : index.v4.size;
  const capacity6 = filters.ipVersion === 4 ? 0 : index.v6.size;
  let details: SelectionDetails | null = options.details ? detailsOf(capacity4 + capacity6) : null;
  const keep = (slot: number, at: number) => {
    if (details === null) return;
    // A network cut around the allowlist gives more entries than the index has.
    if (at === details.score.length) details = grownDetails(details);
    details.score[at] = score[slot];
    details.risk[at] = risk[slot];
    details.categories[at] = categories[slot];
    details.lastSeen[at] = index.lastSeen[slot];
  };

  // IPv4
  let v4: Uint32Array = new Uint32Array(capacity4);
  // Assigned in `add` below: typed with a cast, or the checker would take it as null for good.
  let v4Prefix = null as Uint8Array | null;
  let n4 = 0;
  if (capacity4 > 0) {
    const cursor = index.v4.cursor();
    let coveredTo = -1;
    // The entry being walked: `add` is handed to the allowlist's cut once, not a closure per entry.
    let slot = 0;
    const add = (network: number, len: number) => {
      if (n4 === v4.length) {
        v4 = grownUint32(v4);
        if (v4Prefix !== null) v4Prefix = grownPrefixes(v4Prefix, 32);
      }
      if (len !== 32) {
        v4Prefix ??= new Uint8Array(v4.length).fill(32);
        v4Prefix[n4] = len;
      }
      keep(slot, n4);
      v4[n4++] = network;
    };
    while (cursor.next()) {
      if (pace.spend()) yield;
      const network = cursor.network;
      if (network <= coveredTo) continue;
      slot = cursor.value;
      if (!entryMatches(index, slot, filters)) continue;
      const len = cursor.prefixLength;
      if (len !== 32) coveredTo = network + 2 ** (32 - len) - 1;
      allowlist.eachBlockOutsideV4(network, len, add);
    }
  }

  // IPv6
  let v6: Uint32Array = new Uint32Array(capacity6 * 4);
  let v6Prefix = null as Uint8Array | null;
  let n6 = 0;
  if (capacity6 > 0) {
    const cursor = index.v6.cursor();
    const coveredTo = new Uint32Array(4);
    let covering = false;
    let slot = 0;
    const add = (network: ArrayLike<number>, len: number) => {
      if (n6 * 4 === v6.length) {
        v6 = grownUint32(v6);
        if (v6Prefix !== null) v6Prefix = grownPrefixes(v6Prefix, 128);
      }
      if (len !== 128) {
        v6Prefix ??= new Uint8Array(v6.length / 4).fill(128);
        v6Prefix[n6] = len;
      }
      keep(slot, n4 + n6); // behind the IPv4 entries, whose count is final now
      v6.set(network, n6 * 4);
      n6++;
    };
    while (cursor.next()) {
      if (pace.spend()) yield;
      const network = cursor.network;
      if (covering && compareWords(network, coveredTo) <= 0) continue;
      slot = cursor.value;
      if (!entryMatches(index, slot, filters)) continue;
      const len = cursor.prefixLength;
      if (len !== 128) {
        lastOfIpv6Network(network, len, coveredTo);
        covering = true;
      }
      allowlist.eachBlockOutsideV6(network, len, add);
    }
  }

  // A list much shorter than the index gives back the memory it does not use.
  if (n4 < v4.length / 2) {
    v4 = v4.slice(0, n4);
    v4Prefix = v4Prefix?.slice(0, n4) ?? null;
  }
  if (n6 * 4 < v6.length / 2) {
    v6 = v6.slice(0, n6 * 4);
    v6Prefix = v6Prefix?.slice(0, n6) ?? null;
  }
  let kept = details;
  const n = n4 + n6;
  if (details !== null && n < details.score.length / 2) {
    kept = { score: details.score.slice(0, n), risk: details.risk.slice(0, n), categories: details.categories.slice(0, n), lastSeen: details.lastSeen.slice(0, n) };
  }
  return { count: n4 + n6, v4Count: n4, v4, v4Prefix, v6Count: n6, v6, v6Prefix, details: kept };
}

function detailsOf(size: number): SelectionDetails {
  return { score: new Uint8Array(size), risk: new Uint8Array(size), categories: new Uint16Array(size), lastSeen: new Float64Array(size) };
}

function grownDetails(d: SelectionDetails): SelectionDetails {
  const grown = detailsOf(Math.max(16, d.score.length * 2));
  grown.score.set(d.score);
  grown.risk.set(d.risk);
  grown.categories.set(d.categories);
  grown.lastSeen.set(d.lastSeen);
  return grown;
}

function grownUint32(a: Uint32Array): Uint32Array {
  const grown = new Uint32Array(Math.max(16, a.length * 2));
  grown.set(a);
  return grown;
}

/** Prefix lengths grown to twice as many, the new ones `full` (an address). */
function grownPrefixes(a: Uint8Array, full: number): Uint8Array {
  const grown = new Uint8Array(Math.max(16, a.length * 2)).fill(full);
  grown.set(a);
  return grown;
}

/** A cursor over a selection, for the renderers. */
export function selectionCursor(selection: BlocklistSelection): BlocklistCursor {
  const { v4, v4Count, v4Prefix, v6, v6Count, v6Prefix, details } = selection;
  const words = new Uint32Array(4);
  let i = -1;
  const c: BlocklistCursor = {
    version: 4,
    v4: 0,
    v6: words,
    prefixLength: 32,
    score: 0,
    risk: 0,
    categories: 0,
    lastSeenMs: Number.NaN,
    next() {
      const at = ++i;
      if (at < v4Count) {
        c.v4 = v4[at];
        c.prefixLength = v4Prefix === null ? 32 : v4Prefix[at];
      } else if (at < v4Count + v6Count) {
        const k = at - v4Count;
        c.version = 6;
        words[0] = v6[4 * k];
        words[1] = v6[4 * k + 1];
        words[2] = v6[4 * k + 2];
        words[3] = v6[4 * k + 3];
        c.prefixLength = v6Prefix === null ? 128 : v6Prefix[k];
      } else {
        i = v4Count + v6Count;
        return false;
      }
      if (details !== null) {
        c.score = details.score[at];
        c.risk = details.risk[at] as RiskCode;
        c.categories = details.categories[at];
        c.lastSeenMs = details.lastSeen[at];
      }
      return true;
    },
  };
  return c;
}

/**
 * The renderer of a selection in a format: what the API streams and what the offline CLI writes to stdout
 * (`renderChunks(blocklistRenderer(...))`), byte for byte the same for the same `generatedAtMs`.
 */
export function blocklistRenderer(format: BlocklistFormat, filters: BlocklistFilters, selection: BlocklistSelection, generatedAtMs: number): BlocklistRenderer {
  return createRenderer(format, { generatedAtMs, count: selection.count, filters }, selectionCursor(selection));
}

// ---------------------------------------------------------------------------------------------------------
// The service behind GET /v1/ip/blocklist

export type BlocklistAnswer =
  | { status: 304; etag: string }
  | {
      status: 200;
      etag: string;
      contentType: string;
      /** The whole body when it fits in one chunk, else a stream that renders a chunk per pull. */
      body: Uint8Array | ReadableStream<Uint8Array>;
      /** Entries on the list. */
      count: number;
    };

export interface BlocklistServiceDeps {
  index: ReputationIndex;
  allowlist: Allowlist;
  clock: Clock;
  /** Rescoring of addresses past retention (Reputation.expireDue): runs before the ETag is computed. */
  expireDue: () => void;
  /** Bytes per streamed chunk (default 64 KiB). */
  chunkSize?: number;
}

const SELECTION_CACHE_LIMIT = 8;
/** Walks in steps a list gets before it is selected at once (changes kept overtaking the steps). */
export const WALK_ATTEMPTS = 3;

const selectionKey = (filters: BlocklistFilters, details: boolean) => `${filtersKey(filters)}${details ? "+d" : ""}`;

export class BlocklistService {
  private readonly instance: string;
  private allowlistChanges = 0;
  /** The list state (generation and allowlist) last seen, and when it was first seen: the lists' generatedAt. */
  private stateKey = "";
  private stateSince = 0;
  private readonly selections = new Map<string, BlocklistSelection>();
  /** Walks in steps under way, by state and list. */
  private readonly walks = new Map<string, Promise<BlocklistSelection | null>>();

  constructor(private readonly deps: BlocklistServiceDeps) {
    const id = new Uint32Array(2);
    crypto.getRandomValues(id);
    this.instance = id[0].toString(36) + id[1].toString(36);
    deps.allowlist.onChange(() => this.allowlistChanges++);
  }

  /**
   * Answers one request: parses the parameters (400 validation_failed naming the allowed values), brings the
   * index up to date with retention, and answers 304 when `If-None-Match` holds the current ETag.
   */
  answer(params: BlocklistParams, ifNoneMatch: string | null): BlocklistAnswer {
    const { filters, format } = parseBlocklistParams(params);
    const etag = this.etag(filters, format);
    if (ifNoneMatch !== null && etagMatches(ifNoneMatch, etag)) return { status: 304, etag };
    const selection = this.selection(filters, needsDetails(format));
    const renderer = blocklistRenderer(format, filters, selection, this.stateSince);
    return { status: 200, etag, contentType: CONTENT_TYPES[format], body: streamBody(renderer, this.deps.chunkSize), count: selection.count };
  }

  /**
   * `answer`, with a list not cached at the current state selected in steps, a turn of the event loop between
   * two, so other requests are served meanwhile (issue 29: a million-entry walk held the loop for a second). A
   * change of the index or allowlist during the walk starts it again, so the list is still the one of a single
   * state, the one its ETag names; when changes overtook WALK_ATTEMPTS - 1 walks, the next runs at once.
   */
  async answerInTurns(params: BlocklistParams, ifNoneMatch: string | null): Promise<BlocklistAnswer> {
    const { filters, format } = parseBlocklistParams(params);
    const details = needsDetails(format);
    const key = selectionKey(filters, details);
    for (let attempt = 1; attempt < WALK_ATTEMPTS; attempt++) {
      const etag = this.etag(filters, format);
      if ((ifNoneMatch !== null && etagMatches(ifNoneMatch, etag)) || this.selections.has(key)) break;
      const state = this.stateKey;
      const walked = await this.walkInTurns(filters, details, state);
      // Kept only when nothing moved since the walk began: then it is the list of the state the next etag names.
      if (walked !== null && this.currentState() === state && this.stateKey === state) this.keep(key, walked);
    }
    return this.answer(params, ifNoneMatch);
  }

  /** One walk per list and state, shared by the requests that ask for it meanwhile; null when a change overtook it. */
  private walkInTurns(filters: BlocklistFilters, details: boolean, state: string): Promise<BlocklistSelection | null> {
    const key = `${state}/${selectionKey(filters, details)}`;
    let walk = this.walks.get(key);
    if (walk === undefined) {
      const steps = selectBlocklistInSteps(this.deps.index, this.deps.allowlist.set, filters, { details }, loopPace(SELECTION_STEP_ENTRIES));
      walk = inTurnsWhile(steps, () => this.currentState() === state).finally(() => this.walks.delete(key));
      this.walks.set(key, walk);
    }
    return walk;
  }

  /** The index generation and allowlist changes: what a list's contents follow (retention aside). */
  private currentState(): string {
    return `${this.deps.index.generation}.${this.allowlistChanges}`;
  }

  private keep(key: string, selection: BlocklistSelection): void {
    if (this.selections.size >= SELECTION_CACHE_LIMIT) this.selections.delete(this.selections.keys().next().value as string);
    this.selections.set(key, selection);
  }

  /** The current strong ETag of a list (quoted). Rescores what retention expired first: that changes lists. */
  etag(filters: BlocklistFilters, format: BlocklistFormat): string {
    this.deps.expireDue();
    const state = this.currentState();
    if (state !== this.stateKey) {
      this.stateKey = state;
      this.stateSince = this.deps.clock.now();
      this.selections.clear();
    }
    return `"${this.instance}.${state}.${filtersKey(filters)}.${format}"`;
  }

  /** The time the current list state was first seen (the `generatedAt` of lists rendered now). */
  get generatedAt(): string {
    return isoTime(this.stateSince);
  }

  /** The entries of a list at the current state, from the cache when the index has not changed since. */
  private selection(filters: BlocklistFilters, details: boolean): BlocklistSelection {
    const key = selectionKey(filters, details);
    const cached = this.selections.get(key);
    if (cached !== undefined) return cached;
    const selection = selectBlocklist(this.deps.index, this.deps.allowlist.set, filters, { details });
    this.keep(key, selection);
    return selection;
  }
}

/**
 * Whether an If-None-Match value names `etag`: `*`, or a comma list of tags compared weakly (RFC 9110 13.1.2:
 * `W/"x"` matches `"x"`).
 */
export function etagMatches(header: string, etag: string): boolean {
  const value = header.trim();
  if (value === "*") return true;
  for (const part of value.split(",")) {
    let tag = part.trim();
    if (tag.startsWith("W/")) tag = tag.slice(2);
    if (tag === etag) return true;
  }
  return false;
}

/**
 * The first chunk is rendered now: a list that fits in it goes out whole (with a Content-Length). Also streams
 * `/api/v2/blacklist`. Each further chunk is rendered after a turn of the event loop: Bun pulls the next one as
 * soon as the socket took the last, so a client on a fast link had megabytes rendered in one turn (issue 29: 100 to
 * 230 ms at 200,000 entries, while lookups waited).
 */
export function streamBody(renderer: Pick<BlocklistRenderer, "fill">, chunkSize = 64 * 1024): Uint8Array | ReadableStream<Uint8Array> {
  const out = new ChunkWriter(chunkSize);
  if (renderer.fill(out)) return out.take();
  let pending: Uint8Array | null = out.take();
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending !== null) {
        controller.enqueue(pending);
        pending = null;
        return;
      }
      await nextTurn();
      if (cancelled) return; // the client went away during the turn
      const done = renderer.fill(out);
      if (out.pos > 0) controller.enqueue(out.take());
      if (done) controller.close();
    },
    cancel() {
      cancelled = true;
    },
  });
}
