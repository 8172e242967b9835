// The densest span of a detection group, found a step at a time: the span of at most `windowMs` holding the
// most distinct addresses (the earliest on a tie), if it holds at least `min` (the rules: threat-patterns.ts).
// The group's reports are sorted by time, those of one time staying in the order they joined, and swept with a
// sliding window that counts each address's reports inside it.
//
// A group can hold most of the window (a large cloud ASN's SSH reports), and read in one piece, 500,000 reports
// held the event loop for 0.7 s at every run. So every loop here spends its work on the caller's Pace, and no
// report becomes an object or a text: an address is its number (IPv4) or the index of its object (IPv6), the
// addresses are ranked by sorting them, and the sweep counts reports by rank in an array (a map keyed by text
// also grows, and rehashes, in one piece). Only the span's addresses become objects.

import type { Category } from "./categories";
import { compareWords, type Ip, ipv4FromNumber, type Ipv6 } from "./ip";
import type { Pace } from "./pace";
import { sortedInSteps } from "./sorted-in-steps";

/** The reports of one group as detection reads them: by position, 0 to size - 1, in the order they joined. */
export interface GroupReports {
  readonly size: number;
  atMs(position: number): number;
  /** The address as its number when it is IPv4, else -1 (see ipv6). */
  ipv4(position: number): number;
  /** The address when it is IPv6. */
  ipv6(position: number): Ipv6;
  category(position: number): Category;
  asn(position: number): number | null;
}

export interface ReportSpan {
  /** The span's reports, as positions in the group, in time order. */
  readonly reports: Int32Array;
  /** Its distinct addresses, sorted (IPv4 first, then IPv6, each ascending). */
  readonly addresses: Ip[];
  readonly startMs: number;
  readonly endMs: number;
}

export function* densestSpanInSteps(group: GroupReports, windowMs: number, min: number, pace: Pace): Generator<void, ReportSpan | null> {
  const columns = yield* readInSteps(group, pace);
  const { atMs } = columns;
  const byTime = yield* sortedInSteps(group.size, (a, b) => atMs[a] < atMs[b], pace);
  const ranks = yield* rankedInSteps(columns, pace);
  const best = yield* sweepInSteps(byTime, atMs, ranks, windowMs, min, pace);
  if (best === null) return null;
  const reports = byTime.subarray(best.from, best.to + 1);
  return {
    reports,
    addresses: yield* addressesInSteps(reports, best.distinct, columns, ranks, pace),
    startMs: atMs[reports[0]],
    endMs: atMs[reports[reports.length - 1]],
  };
}

/** An IPv6 address is IPV6 + the index of its object; every IPv4 number is below. */
const IPV6 = 2 ** 32;

interface Columns {
  atMs: Float64Array;
  address: Float64Array;
  ipv6: Ipv6[];
}

function* readInSteps(group: GroupReports, pace: Pace): Generator<void, Columns> {
  const columns: Columns = { atMs: new Float64Array(group.size), address: new Float64Array(group.size), ipv6: [] };
  for (let p = 0; p < group.size; p++) {
    columns.atMs[p] = group.atMs(p);
    const v4 = group.ipv4(p);
    columns.address[p] = v4 >= 0 ? v4 : IPV6 + columns.ipv6.push(group.ipv6(p)) - 1;
    if (pace.spend()) yield;
  }
  return columns;
}

/** Whether the address of position `a` sorts strictly before that of `b` (compareIp's order). */
function addressBefore({ address, ipv6 }: Columns): (a: number, b: number) => boolean {
  return (a, b) => {
    const x = address[a];
    const y = address[b];
    if (x < IPV6 || y < IPV6) return x < y;
    return compareWords(ipv6[x - IPV6].words, ipv6[y - IPV6].words) < 0;
  };
}

interface Ranks {
  /** Each position's address as its rank among the group's distinct addresses (0 the lowest). */
  rankOf: Int32Array;
  /** A position holding each rank's address. */
  holding: Int32Array;
}

function* rankedInSteps(columns: Columns, pace: Pace): Generator<void, Ranks> {
  const n = columns.address.length;
  const before = addressBefore(columns);
  const byAddress = yield* sortedInSteps(n, before, pace);
  const rankOf = new Int32Array(n);
  const holding = new Int32Array(n);
  let ranks = 0;
  for (let k = 0; k < n; k++) {
    const p = byAddress[k];
    if (k === 0 || before(byAddress[k - 1], p)) holding[ranks++] = p;
    rankOf[p] = ranks - 1;
    if (pace.spend()) yield;
  }
  return { rankOf, holding: holding.subarray(0, ranks) };
}

/** The first span with the most distinct addresses, as indexes into `byTime`, if it has at least `min`. */
function* sweepInSteps(
  byTime: Int32Array,
  atMs: Float64Array,
  { rankOf, holding }: Ranks,
  windowMs: number,
  min: number,
  pace: Pace,
): Generator<void, { from: number; to: number; distinct: number } | null> {
  const inSpan = new Int32Array(holding.length);
  let distinct = 0;
  let best: { from: number; to: number; distinct: number } | null = null;
  let from = 0;
  for (let to = 0; to < byTime.length; to++) {
    if (inSpan[rankOf[byTime[to]]]++ === 0) distinct++;
    while (atMs[byTime[to]] - atMs[byTime[from]] > windowMs) {
      if (--inSpan[rankOf[byTime[from++]]] === 0) distinct--;
      if (pace.spend()) yield;
    }
    if (distinct >= min && (best === null || distinct > best.distinct)) best = { from, to, distinct };
    if (pace.spend()) yield;
  }
  return best;
}

/** The `distinct` addresses of the reports at `positions`, sorted: ranks are in address order. */
function* addressesInSteps(positions: Int32Array, distinct: number, columns: Columns, { rankOf, holding }: Ranks, pace: Pace): Generator<void, Ip[]> {
  const inSpan = new Uint8Array(holding.length);
  for (let k = 0; k < positions.length; k++) {
    inSpan[rankOf[positions[k]]] = 1;
    if (pace.spend()) yield;
  }
  const addresses = new Array<Ip>(distinct);
  let found = 0;
  for (let rank = 0; rank < holding.length; rank++) {
    if (inSpan[rank] === 1) {
      const address = columns.address[holding[rank]];
      addresses[found++] = address < IPV6 ? ipv4FromNumber(address) : columns.ipv6[address - IPV6];
    }
    if (pace.spend()) yield;
  }
  return addresses;
}
