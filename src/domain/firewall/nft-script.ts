// The `nft -f` scripts of a firewall sync (contract 19), each one transaction: a whole replacement (the sets
// created when missing, flushed and refilled) and a difference (`delete element` + `create element`, which fail,
// and so change nothing, when the set does not hold what the sync believes it holds). Only the sync's own table
// and sets are named: nothing else in the ruleset is touched, and no rule is added. Written as byte chunks.

import { ChunkWriter } from "../blocklist/chunk-writer";
import type { IpVersion } from "../ip";
import { type EntryDifference, type EntryList, writeIpv4Key } from "./entry-list";

export interface NftNames {
  table: string;
  sets: Readonly<Record<IpVersion, string>>;
}

/** Elements per statement, as the appliance's own nft format writes them. */
const ELEMENTS_PER_STATEMENT = 10_000;
const CHUNK = 256 * 1024;

function declarations(w: ChunkWriter, n: NftNames): void {
  w.ascii(`add table inet ${n.table}\n`);
  w.ascii(`add set inet ${n.table} ${n.sets[4]} { type ipv4_addr; flags interval; }\n`);
  w.ascii(`add set inet ${n.table} ${n.sets[6]} { type ipv6_addr; flags interval; }\n`);
}

/** `verb element inet T S { ... }` statements, at most 10,000 elements each. */
function* statements<T>(w: ChunkWriter, head: string, items: Iterable<T>, write: (w: ChunkWriter, item: T) => void): Generator<Uint8Array> {
  let inStatement = 0;
  for (const item of items) {
    if (inStatement === ELEMENTS_PER_STATEMENT) {
      w.ascii("}\n");
      inStatement = 0;
    }
    if (inStatement === 0) w.ascii(head);
    w.byte(9);
    write(w, item);
    w.ascii(",\n");
    inStatement++;
    if (w.full) yield w.take();
  }
  if (inStatement > 0) w.ascii("}\n");
}

const writeText = (w: ChunkWriter, text: string) => w.ascii(text);
const head = (verb: string, n: NftNames, v: IpVersion) => `${verb} element inet ${n.table} ${n.sets[v]} {\n`;

/** The whole list in place of whatever the sets held. */
export function* nftReplaceScript(n: NftNames, list: EntryList): Generator<Uint8Array> {
  const w = new ChunkWriter(CHUNK);
  declarations(w, n);
  w.ascii(`flush set inet ${n.table} ${n.sets[4]}\nflush set inet ${n.table} ${n.sets[6]}\n`);
  yield* statements(w, head("add", n, 4), list.ipv4Keys(), writeIpv4Key);
  yield* statements(w, head("add", n, 6), list.ipv6Entries, writeText);
  yield w.take();
}

/** Only the changes. */
export function* nftDifferenceScript(n: NftNames, d: EntryDifference): Generator<Uint8Array> {
  const w = new ChunkWriter(CHUNK);
  declarations(w, n);
  // Removals first: an added network may cover an address removed in the same step (nft refuses overlaps).
  yield* statements(w, head("delete", n, 4), d.removed4, writeIpv4Key);
  yield* statements(w, head("delete", n, 6), d.removed6, writeText);
  yield* statements(w, head("create", n, 4), d.added4, writeIpv4Key);
  yield* statements(w, head("create", n, 6), d.added6, writeText);
  yield w.take();
}
