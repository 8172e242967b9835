// Firewall bouncers (contract 14): CrowdSec's firewall bouncers pull the appliance's list as "decisions". This
// folder owns what a bouncer is sent: the list for its filter (this file), the difference from what it was last
// sent (decision-stream.ts), and the bouncers themselves (bouncers.ts). src/http/crowdsec/ speaks the wire.
//
// This file: the decisions a filter lists now, as sorted ids (see domain/decisions.ts). Every listed address and
// network passing the filter is one decision, a network inside another listed one too; for an nftables-mode
// bouncer, which keeps only the first address of a Range, IPv4 networks of /22 or smaller are also sent as one Ip
// decision per address.

import { type Category, maskOf } from "../../domain/categories";
import { v4DecisionId, v6DecisionId, v6DecisionValue } from "../../domain/decisions";
import { type RiskLevel, riskCode } from "../../domain/risk";
import type { ReputationIndex } from "../../index/reputation-index";
import type { CidrSet } from "../../index/cidr-set";
import { type Ip, ipv4Mask } from "../../domain/ip";
import { NOT_FOUND } from "../../index/radix-common";
import { Pace } from "../../domain/pace";
import { allAtOnce } from "../../domain/steps";
import { sortNumbersInSteps } from "../../domain/sorted-in-steps";

/** The widest IPv4 network expanded into addresses for nftables-mode bouncers (1,024 addresses). */
export const NFTABLES_EXPANSION_PREFIX = 22;

export interface DecisionFilter {
  minimumRisk: RiskLevel;
  categories: readonly Category[] | null;
  /** Expand IPv4 networks of /22 or smaller into addresses (nftables mode). */
  expandNetworks: boolean;
}

export interface DecisionList {
  /** Decision ids, ascending, distinct. */
  ids: Float64Array;
  /** IPv6 decisions' values by id (IPv4 ids carry their value). */
  v6: Map<number, { value: string; scope: "Ip" | "Range" }>;
}

export function currentDecisions(index: ReputationIndex, allowlist: CidrSet, filter: DecisionFilter): DecisionList {
  return allAtOnce(currentDecisionsInSteps(index, allowlist, filter, new Pace(Infinity)));
}

/**
 * currentDecisions a step at a time: each index entry walked, and each id sorted, is a unit of work on `pace`. The
 * index must not change between two steps (the caller starts again when it did: its cursors cannot follow).
 */
export function* currentDecisionsInSteps(index: ReputationIndex, allowlist: CidrSet, filter: DecisionFilter, pace: Pace): Generator<void, DecisionList> {
  const minRisk = riskCode(filter.minimumRisk);
  const mask = filter.categories && filter.categories.length > 0 ? maskOf(filter.categories) : 0;
  const { risk, categories } = index;
  const listed = (slot: number) => risk[slot] >= minRisk && (mask === 0 || (categories[slot] & mask) !== 0);

  let ids = new Float64Array(Math.max(16, index.v4.size + index.v6.size));
  let n = 0;
  const push = (id: number) => {
    if (n === ids.length) {
      const grown = new Float64Array(ids.length * 2);
      grown.set(ids);
      ids = grown;
    }
    ids[n++] = id;
  };

  // A network the allowlist overlaps is sent as the blocks outside it (as the blocklists cut it).
  const pushV4 = (network: number, len: number) => {
    push(v4DecisionId(network, len));
    if (filter.expandNetworks && len < 32 && len >= NFTABLES_EXPANSION_PREFIX) {
      const count = 2 ** (32 - len);
      for (let i = 0; i < count; i++) push(v4DecisionId(network + i, 32));
    }
  };
  const c4 = index.v4.cursor();
  while (c4.next()) {
    if (pace.spend()) yield;
    if (!listed(c4.value)) continue;
    const network = c4.network;
    const len = c4.prefixLength;
    allowlist.eachBlockOutsideV4(network, len, pushV4);
  }
  const v6 = new Map<number, { value: string; scope: "Ip" | "Range" }>();
  const pushV6 = (network: ArrayLike<number>, len: number) => {
    const id = v6DecisionId(network, len);
    v6.set(id, v6DecisionValue(network, len));
    push(id);
  };
  const c6 = index.v6.cursor();
  while (c6.next()) {
    if (pace.spend()) yield;
    if (!listed(c6.value)) continue;
    allowlist.eachBlockOutsideV6(c6.network, c6.prefixLength, pushV6);
  }
  // Sorted (IPv4 ids come in order from the walk; IPv6 ones are hashes), then repeats dropped (an address listed
  // itself and inside an expanded network).
  const sorted = ids.subarray(0, n);
  yield* sortNumbersInSteps(sorted, pace);
  let m = 0;
  for (let i = 0; i < n; i++) {
    if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[m++] = sorted[i];
    if (pace.spend()) yield;
  }
  // Copied out only when shorter than the array (a copy of a million ids held the loop 30-50 ms).
  return { ids: m === ids.length ? ids : sorted.slice(0, m), v6 };
}

/** One address's own decision as the filter would list it now: its id, and its value when IPv6 and listed. */
export interface AddressDecision {
  id: number;
  listed: boolean;
  v6: { value: string; scope: "Ip" | "Range" } | null;
}

/**
 * The decision of one address that changed, without walking the list; null when a listed network holds it and the
 * filter expands networks into addresses (its id may then be listed by the network: only the whole list can tell).
 */
export function addressDecision(index: ReputationIndex, allowlist: CidrSet, filter: DecisionFilter, ip: Ip): AddressDecision | null {
  if (filter.expandNetworks && ip.version === 4 && index.networkCount > 0) {
    // Any network around it: one wider than /22 with an allowlisted block cut out is expanded in parts.
    for (let len = 0; len < 32; len++) if (index.v4.getPrefix((ip.value & ipv4Mask(len)) >>> 0, len) !== NOT_FOUND) return null;
  }
  const minRisk = riskCode(filter.minimumRisk);
  const mask = filter.categories && filter.categories.length > 0 ? maskOf(filter.categories) : 0;
  const slot = index.slotOf(ip);
  const listed = slot !== NOT_FOUND && index.risk[slot] >= minRisk && (mask === 0 || (index.categories[slot] & mask) !== 0) && !allowlist.contains(ip);
  if (ip.version === 4) return { id: v4DecisionId(ip.value, 32), listed, v6: null };
  return { id: v6DecisionId(ip.words, 128), listed, v6: listed ? v6DecisionValue(ip.words, 128) : null };
}
