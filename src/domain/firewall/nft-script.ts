// The `nft -f` scripts of a firewall sync (contract 19), each one transaction: a whole replacement (the sets
// created when missing, flushed and refilled) and a difference (`delete element` + `create element`, which fail,
// and so change nothing, when the set does not hold what the sync believes it holds). Only the sync's own table
// and sets are named: nothing else in the ruleset is touched, and no rule is added.

import type { IpVersion } from "../ip";

export interface NftNames {
  table: string;
  sets: Readonly<Record<IpVersion, string>>;
}

/** Elements per statement, as the appliance's own nft format writes them. */
const ELEMENTS_PER_STATEMENT = 10_000;

function declarations(n: NftNames): string {
  return (
    `add table inet ${n.table}\n` +
    `add set inet ${n.table} ${n.sets[4]} { type ipv4_addr; flags interval; }\n` +
    `add set inet ${n.table} ${n.sets[6]} { type ipv6_addr; flags interval; }\n`
  );
}

/** `verb element inet T S { ... }` statements for `entries`, in pieces of at most 10,000 elements. */
function* elementStatements(verb: "add" | "create" | "delete", n: NftNames, version: IpVersion, entries: readonly string[]): Generator<string> {
  for (let i = 0; i < entries.length; i += ELEMENTS_PER_STATEMENT) {
    const piece = entries.slice(i, i + ELEMENTS_PER_STATEMENT);
    yield `${verb} element inet ${n.table} ${n.sets[version]} {\n${piece.join(",\n")}\n}\n`;
  }
}

/** The whole list in place of whatever the sets held. */
export function* nftReplaceScript(n: NftNames, entries: Readonly<Record<IpVersion, readonly string[]>>): Generator<string> {
  yield declarations(n) + `flush set inet ${n.table} ${n.sets[4]}\nflush set inet ${n.table} ${n.sets[6]}\n`;
  for (const v of [4, 6] as const) yield* elementStatements("add", n, v, entries[v]);
}

/** Only the changes; null when there are none. */
export function* nftDifferenceScript(
  n: NftNames,
  added: Readonly<Record<IpVersion, readonly string[]>>,
  removed: Readonly<Record<IpVersion, readonly string[]>>,
): Generator<string> {
  yield declarations(n);
  // Removals first: an added network may cover an address removed in the same step (nft refuses overlaps).
  for (const v of [4, 6] as const) yield* elementStatements("delete", n, v, removed[v]);
  for (const v of [4, 6] as const) yield* elementStatements("create", n, v, added[v]);
}
