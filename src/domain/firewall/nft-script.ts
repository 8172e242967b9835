// The `nft -f` scripts of a firewall sync (contract 19), each one transaction: a whole replacement (the sets
// created when missing, flushed and refilled) and a difference (`delete element` + `create element`, which fail,
// and so change nothing, when the set does not hold what the sync believes it holds). Only the sync's own table
// and sets are named: nothing else in the ruleset is touched, and no rule is added. Written as byte chunks;
// IPv4 neighbours are joined into one interval element, and the difference is that of the intervals.

import { ChunkWriter } from "../blocklist/chunk-writer";
import type { IpVersion } from "../ip";
import { type EntryList, ipv4Ranges, rangeDifference, writeIpv4Range } from "./entry-list";

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
const writeRange = (w: ChunkWriter, [first, last]: [number, number]) => writeIpv4Range(w, first, last);

function* rangesOf(list: EntryList): Generator<[number, number]> {
  const r = ipv4Ranges(list);
  for (let i = 0; i < r.count; i++) yield [r.firsts[i], r.lasts[i]];
}
const head = (verb: string, n: NftNames, v: IpVersion) => `${verb} element inet ${n.table} ${n.sets[v]} {\n`;

/** The whole list in place of whatever the sets held (IPv4 neighbours joined into intervals). */
export function* nftReplaceScript(n: NftNames, list: EntryList): Generator<Uint8Array> {
  const w = new ChunkWriter(CHUNK);
  declarations(w, n);
  w.ascii(`flush set inet ${n.table} ${n.sets[4]}\nflush set inet ${n.table} ${n.sets[6]}\n`);
  yield* statements(w, head("add", n, 4), rangesOf(list), writeRange);
  yield* statements(w, head("add", n, 6), list.ipv6Entries, writeText);
  yield w.take();
}

/** Only the changes from the list `held` (as the replace script wrote it) to `next`. */
export function* nftDifferenceScript(n: NftNames, held: EntryList, next: EntryList, d: { added6: string[]; removed6: string[] }): Generator<Uint8Array> {
  const w = new ChunkWriter(CHUNK);
  const ranges = rangeDifference(ipv4Ranges(held), ipv4Ranges(next));
  declarations(w, n);
  // Removals first: an added interval may overlap one removed in the same step (nft refuses overlaps).
  yield* statements(w, head("delete", n, 4), ranges.removed, writeRange);
  yield* statements(w, head("delete", n, 6), d.removed6, writeText);
  yield* statements(w, head("create", n, 4), ranges.added, writeRange);
  yield* statements(w, head("create", n, 6), d.added6, writeText);
  yield w.take();
}
