// One bouncer pull (contract 14): what the decisions stream and `GET /v1/decisions` answer for a key, from the list
// its filter gives now (decision-list.ts) and what it was last sent (decision-stream.ts). A bouncer's key pulls
// with its own filter, mode and duration (registry.ts); any other API key with the default filter (HIGH and worse,
// everything, networks as Range decisions only).
//
// Cursors are bounded (docs/decisions.md): a key keeps those of its CURSORS_PER_KEY most recently pulled client
// addresses, and one not pulled for CURSOR_IDLE_LIMIT_MS is dropped. A cursor is a point in its filter's journal
// (decision-journal.ts); a pull without one gets everything listed and the journal's removal log in `deleted`.

import type { Category } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { MAX_DECISION_DURATION_SECONDS, decisionScope, isV6DecisionId, v4DecisionAddress, v4DecisionId, v4DecisionPrefixLength, v6DecisionId, v6DecisionValue } from "../../domain/decisions";
import { type Cidr, type Ip, ipv4Mask } from "../../domain/ip";
import type { Principal } from "../../domain/principal";
import { RISK_LEVELS, type RiskLevel } from "../../domain/risk";
import { sortedIndexOf } from "../../domain/typed-arrays";
import { NOT_FOUND } from "../../index/radix-common";
import type { ReputationIndex } from "../../index/reputation-index";
import type { BouncerRow, BouncerTables, CursorLimits, CursorRow } from "../../store/bouncers";
import { DecisionJournalTables } from "../../store/decision-journal";
import type { Allowlist } from "../allowlist/allowlist";
import { type DecisionFilter, addressDecision, currentDecisions, currentDecisionsInSteps } from "./decision-list";
import { FilterJournal, JOURNAL_KEEP_MS, type PullWork } from "./decision-journal";
import { type PullView, decisionsJson, planPull, streamPull } from "./decision-stream";
import { SELECTION_STEP_ENTRIES, WALK_ATTEMPTS } from "../blocklists/blocklist";
import { inTurns, inTurnsWhile, loopPace } from "../event-loop-turns";

const DEFAULT_FILTER: DecisionFilter = { minimumRisk: "HIGH", categories: null, expandNetworks: false };
/** A decision's scenario by the risk level of its entry (one string each, not one per decision). */
const SCENARIO_BY_RISK = RISK_LEVELS.map((risk) => `abuse-intel/${risk.toLowerCase()}`);
const LISTED_SCENARIO = "abuse-intel/listed";

/**
 * A key keeps the cursors of this many client addresses, the most recently pulled: a bouncer whose address
 * changes, several bouncers sharing a key, or every bouncer of an edge or snapshot server (whose keys are one
 * principal). A cursor is about as large as the list (12 bytes a decision): a key's take at most 64 times that.
 */
export const CURSORS_PER_KEY = 64;
/**
 * The same for a key configured on an edge or snapshot server (`--api-key`): the operator's own firewalls, often
 * many sharing one key, and one crowded out is told nothing of what left the list until its entries run out.
 */
export const CURSORS_PER_STATIC_KEY = 1024;
/**
 * A cursor not pulled for this long is dropped: everything it was sent had the longest duration at most (596 h),
 * so it has run out of the bouncer's firewall, and the startup answer is what that bouncer needs (a day more, for
 * an answer's transfer and the bouncer's own work, before it adds what it received).
 */
export const CURSOR_IDLE_LIMIT_MS = JOURNAL_KEEP_MS;

export interface PullOptions {
  startup: boolean;
  /** Lower-case scopes wanted: "ip", "range". */
  scopes: ReadonlySet<string>;
  scenariosContaining: string[];
  scenariosNotContaining: string[];
}

export interface BouncerDeps {
  index: ReputationIndex;
  allowlist: Allowlist;
  clock: Clock;
  /** Rescores what retention expired, before the list is read. */
  expireDue: () => void;
  /** The tables; null on a read-only snapshot server, which knows no bouncers and keeps cursors in `cursors`. */
  tables: BouncerTables | null;
  /** The filters' journals: the primary's tables (none: the cursor keeper's, on a snapshot server or an edge). */
  journal?: DecisionJournalTables;
  /**
   * A snapshot server's cursors, by key and client address (default: in memory). An edge passes the same keeper
   * to the services of every snapshot it swaps in, so a bouncer's next pull after a swap is told what left.
   */
  cursors?: CursorKeeper;
}

/**
 * Where a server without tables keeps its bouncers' cursors, by owner (an API key, or the user of a key without
 * an id) and client address: in memory, or in a file that outlives the process (an edge's).
 */
export interface CursorKeeper {
  get(owner: string, client: string): CursorRow | undefined;
  /** Saves `client`'s cursor, dropping the owner's others beyond `limits.perOwner` and every idle cursor. */
  save(owner: string, client: string, cursor: CursorRow, limits: CursorLimits): void;
  /** The journals of the lists its cursors follow, kept as long as the cursors. */
  readonly journal: DecisionJournalTables;
  /** Releases what it holds open (an edge's file). */
  close?(): void;
}

/** Cursors in memory: per owner, a Map by client address in the order they were saved, the least recent first. */
export class MemoryCursors implements CursorKeeper {
  private readonly owners = new Map<string, Map<string, CursorRow>>();
  readonly journal = DecisionJournalTables.inMemory();

  get(owner: string, client: string): CursorRow | undefined {
    return this.owners.get(owner)?.get(client);
  }

  save(owner: string, client: string, cursor: CursorRow, limits: CursorLimits): void {
    for (const [other, byClient] of this.owners) {
      for (const [address, kept] of byClient) if (kept.lastPullAt <= limits.idleSince) byClient.delete(address);
      if (byClient.size === 0) this.owners.delete(other);
    }
    const byClient = this.owners.get(owner) ?? new Map<string, CursorRow>();
    byClient.delete(client);
    for (const leastRecent of byClient.keys()) {
      if (byClient.size < limits.perOwner) break;
      byClient.delete(leastRecent);
    }
    byClient.set(client, cursor);
    this.owners.set(owner, byClient);
  }
}

/** One owner's cursors by client address: the primary's table for an API key, else the server's keeper. */
interface OwnerCursors {
  get(client: string): CursorRow | null;
  save(client: string, cursor: CursorRow, limits: CursorLimits): void;
}

export class Bouncers {
  private readonly cursors: CursorKeeper;
  private readonly journalTables: DecisionJournalTables;
  private allowlistChanges = 0;
  private readonly journals = new Map<string, FilterJournal>();
  private readonly bouncerByKey = new Map<number, BouncerRow | null>();
  private readonly journalByBouncer = new WeakMap<BouncerRow, FilterJournal>();
  private defaultJournal: FilterJournal | null = null;
  private readonly filterOf = new Map<FilterJournal, DecisionFilter>();
  /** Whole lists being computed in steps, by journal. */
  private readonly computing = new Map<FilterJournal, Promise<void>>();
  /** Entries pulls looked at one by one, and lists computed whole (tests count work with them, not time). */
  readonly work: PullWork & { listsComputed: number } = { entriesVisited: 0, listsComputed: 0 };

  constructor(private readonly deps: BouncerDeps) {
    this.cursors = deps.cursors ?? new MemoryCursors();
    this.journalTables = deps.journal ?? this.cursors.journal;
    deps.allowlist.onChange(() => this.allowlistChanges++);
    // Each journal hears which addresses changed, so its next sync updates the list from them alone.
    deps.index.watch((ip) => {
      for (const journal of this.journals.values()) journal.noteChange(ip);
    });
  }

  /** Change rows the journals read (tests count work with it). */
  get journalRowsRead(): number {
    return this.journalTables.rowsRead;
  }

  noteUsageMetrics(principal: Principal): void {
    if (principal.apiKeyId !== null && this.deps.tables !== null) this.deps.tables.noteMetrics(principal.apiKeyId, this.deps.clock.now());
  }

  /**
   * A key's bouncer (null: an API key that is none), read once per key: a bouncer's filter never changes (it is
   * deleted with its key, and a key never becomes a bouncer's later), so `GET /v1/decisions` runs no SQL.
   */
  private bouncerOf(principal: Principal): BouncerRow | null {
    const keyId = principal.apiKeyId;
    if (this.deps.tables === null || keyId === null) return null;
    let row = this.bouncerByKey.get(keyId);
    if (row === undefined) {
      row = this.deps.tables.byKey(keyId);
      if (this.bouncerByKey.size >= 4096) this.bouncerByKey.clear();
      this.bouncerByKey.set(keyId, row);
    }
    return row;
  }

  /** One pull: the body as a stream; the cursor is committed once the body went out whole. */
  pull(principal: Principal, clientAddress: string, options: PullOptions): ReadableStream<Uint8Array> {
    const bouncer = this.bouncerOf(principal);
    const duration = bouncer?.durationSeconds ?? MAX_DECISION_DURATION_SECONDS;
    const journal = this.journalFor(bouncer);
    const view = this.viewOf(options);
    // A pull narrowed by scopes or scenarios has its own cursor: what it leaves out it says nothing of.
    const client = view.key === "" ? clientAddress : `${clientAddress} ${view.key}`;
    const cursors = this.cursorsOf(principal);
    const now = this.deps.clock.now();
    const perOwner = principal.via === "static_key" ? CURSORS_PER_STATIC_KEY : CURSORS_PER_KEY;
    const limits: CursorLimits = { perOwner, idleSince: now - CURSOR_IDLE_LIMIT_MS };
    // An idle cursor answers as none, whether or not a save has dropped it yet.
    const kept = cursors.get(client);
    const cursor = kept !== null && kept.lastPullAt > limits.idleSince ? kept : null;
    const plan = planPull(journal, cursor, options.startup, now, duration, this.work);
    return streamPull(plan, now, duration, (id) => this.scenarioOf(id), () => cursors.save(client, plan.next, limits), view);
  }

  private cursorsOf(principal: Principal): OwnerCursors {
    const { tables } = this.deps;
    const keyId = principal.apiKeyId;
    if (tables !== null && keyId !== null) {
      return { get: (client) => tables.cursor(keyId, client), save: (client, cursor, limits) => tables.saveCursor(keyId, client, cursor, limits) };
    }
    // The owner as the cursor file's rows name it: an edge's or snapshot server's configured key by its name.
    const owner = principal.staticKey !== undefined ? `key:${principal.staticKey}` : String(keyId ?? `user${principal.userId}`);
    // A file written before each key had its own cursors holds them under the one principal all keys were then.
    const legacy = principal.staticKey !== undefined ? `user${principal.userId}` : null;
    return {
      get: (client) => this.cursors.get(owner, client) ?? (legacy === null ? undefined : this.cursors.get(legacy, client)) ?? null,
      save: (client, cursor, limits) => this.cursors.save(owner, client, cursor, limits),
    };
  }

  /** `GET /v1/decisions?ip=|range=`: the listed address itself and every listed network around it, or null. */
  decisionsAround(principal: Principal, key: Ip | Cidr): string | null {
    const bouncer = this.bouncerOf(principal);
    const duration = bouncer?.durationSeconds ?? MAX_DECISION_DURATION_SECONDS;
    const list = this.journalFor(bouncer).list;
    const ip = "prefixLength" in key ? key.network : key;
    const top = "prefixLength" in key ? key.prefixLength : ip.version === 4 ? 32 : 128;
    let found: { id: number; v6Value: string | null; scenario: string }[] | null = null;
    const now = this.deps.clock.now();
    const words = new Uint32Array(4);
    for (let len = top; len >= 0; len--) {
      let id: number;
      // An IPv4 id carries its address and prefix length; an IPv6 one's value is written from the text.
      if (ip.version === 4) {
        id = v4DecisionId((ip.value & ipv4Mask(len)) >>> 0, len);
      } else {
        for (let w = 0; w < 4; w++) words[w] = (ip.words[w] & ipv4Mask(Math.min(32, Math.max(0, len - 32 * w)))) >>> 0;
        id = v6DecisionId(words, len);
      }
      if (sortedIndexOf(list.ids, id) < 0) continue;
      const v6Value = ip.version === 4 ? null : v6DecisionValue(words, len).value;
      (found ??= []).push({ id, v6Value, scenario: this.scenarioOf(id) });
    }
    return found === null ? null : decisionsJson(found, duration, now + duration * 1000);
  }

  /**
   * Null when the list `principal` pulls is current, or follows from the addresses that changed since (then a pull
   * costs what changed); else a promise that computes the list whole in steps, a turn of the event loop between
   * two, and brings its journal up to it, in steps too (the first pull after a start, after an allowlist change or
   * a listed network's: at 1 M listed the computation held the loop 0.15-0.2 s, the journal's comparison with it
   * 50 ms, and its reading after a restart 0.5 s). A pull asked
   * meanwhile waits for the same computation; a change during it starts it again, and when changes overtook
   * WALK_ATTEMPTS - 1 of them the pull computes the list at once, as before.
   */
  listReady(principal: Principal): Promise<void> | null {
    this.deps.expireDue();
    const journal = this.journalOf(this.bouncerOf(principal));
    let computing = this.computing.get(journal);
    if (computing === undefined) {
      if (!journal.needsWholeList(this.deps.index.generation, this.allowlistChanges)) return null;
      computing = this.computeInTurns(journal).finally(() => this.computing.delete(journal));
      this.computing.set(journal, computing);
    }
    return computing;
  }

  private async computeInTurns(journal: FilterJournal): Promise<void> {
    const { index, allowlist } = this.deps;
    const filter = this.filterOf.get(journal)!;
    for (let attempt = 1; attempt < WALK_ATTEMPTS; attempt++) {
      const generation = index.generation;
      const allowlistChanges = this.allowlistChanges;
      if (!journal.needsWholeList(generation, allowlistChanges)) return;
      const unchanged = () => index.generation === generation && this.allowlistChanges === allowlistChanges;
      const list = await inTurnsWhile(currentDecisionsInSteps(index, allowlist.set, filter, loopPace(SELECTION_STEP_ENTRIES)), unchanged);
      if (list === null || !unchanged()) continue;
      this.work.listsComputed++;
      // Compared with the journal in steps too; changes meanwhile are noted for the next sync.
      await inTurns(journal.syncInSteps(generation, allowlistChanges, this.deps.clock.now(), list, loopPace(SELECTION_STEP_ENTRIES)));
      return;
    }
  }

  /** The journal of a bouncer's filter, brought up to the list now (computed again only after a change). */
  private journalFor(bouncer: BouncerRow | null): FilterJournal {
    this.deps.expireDue();
    const journal = this.journalOf(bouncer);
    journal.sync(this.deps.index.generation, this.allowlistChanges, this.deps.clock.now());
    return journal;
  }

  /** The journal of a bouncer's filter (made on first use), as it was last synced. */
  private journalOf(bouncer: BouncerRow | null): FilterJournal {
    let journal = bouncer === null ? this.defaultJournal : this.journalByBouncer.get(bouncer);
    if (journal == null) {
      const filter: DecisionFilter = bouncer === null
        ? DEFAULT_FILTER
        : { minimumRisk: bouncer.minimumRisk as RiskLevel, categories: bouncer.categories === null ? null : (bouncer.categories.split(",") as Category[]), expandNetworks: bouncer.mode === "nftables" };
      const filterKey = `${filter.minimumRisk}|${filter.categories?.join(",") ?? ""}|${filter.expandNetworks}`;
      journal = this.journals.get(filterKey);
      if (journal === undefined) {
        const { index, allowlist } = this.deps;
        const compute = () => {
          this.work.listsComputed++;
          return currentDecisions(index, allowlist.set, filter);
        };
        journal = new FilterJournal(filterKey, this.journalTables, compute, (ip) => addressDecision(index, allowlist.set, filter, ip));
        this.journals.set(filterKey, journal);
        this.filterOf.set(journal, filter);
      }
      if (bouncer === null) this.defaultJournal = journal;
      else this.journalByBouncer.set(bouncer, journal);
    }
    return journal;
  }

  /** What a pull narrows the list to (scopes, scenarios): decisions outside it are neither new nor deleted. */
  private viewOf(options: PullOptions): PullView {
    const allScopes = options.scopes.has("ip") && options.scopes.has("range");
    const scenarios = options.scenariosContaining.length > 0 || options.scenariosNotContaining.length > 0;
    if (allScopes && !scenarios) return { key: "", sendsNew: null, sendsDeleted: null };
    const inScope = (id: number, v6Value: (id: number) => string | undefined) => allScopes || options.scopes.has(decisionScope(id, v6Value) ?? "ip");
    const inScenarios = (id: number) => {
      const scenario = this.scenarioOf(id);
      if (options.scenariosContaining.length > 0 && !options.scenariosContaining.some((s) => scenario.includes(s))) return false;
      return !options.scenariosNotContaining.some((s) => scenario.includes(s));
    };
    const key = `scopes=${[...options.scopes].sort().join(",")}&in=${options.scenariosContaining.join(",")}&out=${options.scenariosNotContaining.join(",")}`;
    return { key, sendsNew: (id, v) => inScope(id, v) && inScenarios(id), sendsDeleted: inScope };
  }

  /** `abuse-intel/<risk>` of the entry behind a decision (an expanded address: its network's). */
  private scenarioOf(id: number): string {
    const { index } = this.deps;
    let slot = NOT_FOUND;
    if (!isV6DecisionId(id)) {
      const address = v4DecisionAddress(id);
      slot = index.v4.getPrefix(address, v4DecisionPrefixLength(id));
      if (slot === NOT_FOUND) slot = index.v4.longestMatch(address);
    }
    return slot === NOT_FOUND ? LISTED_SCENARIO : (SCENARIO_BY_RISK[index.risk[slot]] ?? LISTED_SCENARIO);
  }

}
