// Renders a blocklist (contract 5.10) in each of its formats, from a cursor over its entries into byte chunks:
// pure functions of the entries, the filters and an injected `generatedAt`, shared by `GET /v1/ip/blocklist`
// and the offline `abuse-intel blocklist`, which therefore print the same bytes. Entries come IPv4 first, then
// IPv6, each family ascending; a listed network (prefix shorter than /32 or /128) is one entry whose addresses
// do not appear on their own.
//
// The formats, byte for byte:
// - `json` (application/json): `{"success":true,"data":{"generatedAt":"<ISO>","count":<entries>,"filters":
//   {"category":[...]|null,"riskLevel":"MEDIUM","ipVersion":4|6|null},"ips":["192.0.2.1","2001:db8::/32",...]}}`,
//   no whitespace, no trailing newline. `ips` holds strings (an address, or a network in CIDR form); the csv
//   format carries scores and categories.
// - `txt` (text/plain): one entry per line (an address, or a listed network in CIDR form), every line ending
//   with "\n", nothing else; an empty list is an empty body.
// - `cidr` (text/plain): the smallest set of CIDR blocks covering exactly the entries, one per line, always with
//   the prefix length (`192.0.2.1/32`), IPv4 blocks then IPv6 blocks, ascending; empty list, empty body.
// - `nft` (text/plain): an nftables script for `nft -f`. It creates, if missing, table `inet abuse_intel` with the
//   interval sets `abuse_intel_v4` (ipv4_addr) and `abuse_intel_v6` (ipv6_addr), flushes them and adds the
//   entries, all in the one transaction `nft -f` runs: a reload replaces the contents atomically, and chains
//   the operator added to the table (`ip saddr @abuse_intel_v4 drop`) keep working. Only the families the list
//   covers are touched (`ipVersion=4` leaves `abuse_intel_v6` alone). An empty set is flushed and gets no
//   `add element` (nft refuses `{ }`). Elements go in statements of at most 10,000, one per line with a
//   trailing comma (nft accepts it).
// - `ipset` (text/plain): input for `ipset restore`: for each family it covers, the live set (`abuse_intel_v4`,
//   `hash:net family inet`; `abuse_intel_v6`, `family inet6`) is created if missing, a staging set
//   `abuse_intel_v4_next` is created, flushed and filled, then `swap`ped with the live one and destroyed, so
//   iptables rules matching `--match-set abuse_intel_v4 src` go from the old list to the new one in one step,
//   never seeing a partial list. Every set is `hashsize 1024 maxelem 16777216` so that `create -exist` finds the
//   same parameters on every run (ipset refuses `-exist` when they differ); the hash grows as needed.
// - `csv` (text/csv): the header `ip,reputationScore,riskLevel,categories,lastSeen`, then one row per entry;
//   categories are joined with `|` (`BRUTE_FORCE|SSH`) so no field ever needs quoting; lastSeen is ISO 8601 or
//   empty when unknown. Lines end with "\n".
// The nft and ipset scripts start with `#` comment lines naming the time, the count and the filters.

import { Ipv4CidrAggregator, Ipv6CidrAggregator } from "../aggregate";
import { type IpVersion, lastOfIpv6Network } from "../ip";
import { categoriesFromMask } from "../categories";
import { RISK_LEVELS, type RiskCode } from "../risk";
import { ChunkWriter, chunksToString } from "./chunk-writer";
import { type BlocklistFilters, type BlocklistFormat, describeFilters, filtersView } from "./query";

/** Reads the entries one at a time; the fields describe the current entry and are overwritten by `next()`. */
export interface BlocklistCursor {
  /** Moves to the next entry: IPv4 ones first, then IPv6, each family ascending. False at the end. */
  next(): boolean;
  version: IpVersion;
  /** IPv4: the address (or network) as an unsigned 32-bit number. */
  v4: number;
  /** IPv6: its four words, most significant first (may be reused between entries). */
  v6: ArrayLike<number>;
  /** 32 or 128 for an address; shorter for a listed network. */
  prefixLength: number;
  /** Only the csv format reads these four. */
  score: number;
  risk: RiskCode;
  categories: number;
  /** Milliseconds, NaN when unknown. */
  lastSeenMs: number;
}

/** What the renderer is told about the list as a whole. */
export interface BlocklistHead {
  /** The time the list describes; injected so that the API and the CLI print the same bytes. */
  generatedAtMs: number;
  /** How many entries the cursor will give (the JSON `count`). */
  count: number;
  filters: BlocklistFilters;
}

export interface BlocklistRenderer {
  readonly contentType: string;
  /** Writes until `out` is full or the list has ended; true once everything has been written. */
  fill(out: ChunkWriter): boolean;
}

export const CONTENT_TYPES: Readonly<Record<BlocklistFormat, string>> = {
  json: "application/json; charset=utf-8",
  txt: "text/plain; charset=utf-8",
  cidr: "text/plain; charset=utf-8",
  nft: "text/plain; charset=utf-8",
  ipset: "text/plain; charset=utf-8",
  csv: "text/csv; charset=utf-8",
};

export const NFT_TABLE = "inet abuse_intel";
export const SET_NAMES: Readonly<Record<IpVersion, string>> = { 4: "abuse_intel_v4", 6: "abuse_intel_v6" };
/** Elements per nft `add element` statement. */
export const NFT_ELEMENTS_PER_STATEMENT = 10_000;
const IPSET_PARAMETERS = "hashsize 1024 maxelem 16777216";

/** The three parts of a format: what comes before the entries, each entry, what comes after. */
interface FormatWriter {
  begin(w: ChunkWriter): void;
  entry(w: ChunkWriter, c: BlocklistCursor): void;
  end(w: ChunkWriter): void;
}

export function createRenderer(format: BlocklistFormat, head: BlocklistHead, cursor: BlocklistCursor): BlocklistRenderer {
  const writer = FORMATS[format](head);
  let state: "start" | "entries" | "done" = "start";
  return {
    contentType: CONTENT_TYPES[format],
    fill(out) {
      if (state === "start") {
        writer.begin(out);
        state = "entries";
      }
      while (state === "entries") {
        if (out.full) return false;
        if (cursor.next()) writer.entry(out, cursor);
        else {
          writer.end(out);
          state = "done";
        }
      }
      return true;
    },
  };
}

/** The rendered list as chunks of about `chunkSize` bytes. */
export function* renderChunks(renderer: BlocklistRenderer, chunkSize = 64 * 1024): Generator<Uint8Array> {
  const out = new ChunkWriter(chunkSize);
  for (;;) {
    const done = renderer.fill(out);
    if (out.pos > 0) yield out.take();
    if (done) return;
  }
}

/** The whole rendered list as one string (tests and small lists). */
export function renderToString(format: BlocklistFormat, head: BlocklistHead, cursor: BlocklistCursor): string {
  return chunksToString(renderChunks(createRenderer(format, head, cursor)));
}

// ---------------------------------------------------------------------------------------------------------
// Pieces

const isAddress = (c: BlocklistCursor): boolean => c.prefixLength === (c.version === 4 ? 32 : 128);

/** The entry as text: an address, or a network in CIDR form. */
function writeEntry(w: ChunkWriter, c: BlocklistCursor): void {
  if (c.version === 4) w.ipv4(c.v4);
  else w.ipv6(c.v6);
  if (!isAddress(c)) {
    w.byte(47); // "/"
    w.uint(c.prefixLength);
  }
}

const isoTime = (ms: number): string => new Date(ms).toISOString();

function families(filters: BlocklistFilters): IpVersion[] {
  return filters.ipVersion === null ? [4, 6] : [filters.ipVersion];
}

function commentLines(head: BlocklistHead, how: string): string {
  return (
    `# abuse-intel blocklist generated at ${isoTime(head.generatedAtMs)}: ${head.count} ${head.count === 1 ? "entry" : "entries"} ` +
    `(${describeFilters(head.filters)})\n# ${how}\n`
  );
}

// ---------------------------------------------------------------------------------------------------------
// The formats

const FORMATS: Record<BlocklistFormat, (head: BlocklistHead) => FormatWriter> = {
  json(head) {
    let first = true;
    return {
      begin(w) {
        const filters = JSON.stringify(filtersView(head.filters));
        w.ascii(`{"success":true,"data":{"generatedAt":"${isoTime(head.generatedAtMs)}","count":${head.count},"filters":${filters},"ips":[`);
      },
      entry(w, c) {
        if (first) first = false;
        else w.byte(44); // ","
        w.byte(34); // '"'
        writeEntry(w, c);
        w.byte(34);
      },
      end(w) {
        w.ascii("]}}");
      },
    };
  },

  txt() {
    return {
      begin() {},
      entry(w, c) {
        writeEntry(w, c);
        w.byte(10);
      },
      end() {},
    };
  },

  cidr() {
    let w: ChunkWriter;
    const v4 = new Ipv4CidrAggregator((network, prefixLength) => {
      w.ipv4(network);
      w.byte(47);
      w.uint(prefixLength);
      w.byte(10);
    });
    const v6 = new Ipv6CidrAggregator((network, prefixLength) => {
      w.ipv6(network);
      w.byte(47);
      w.uint(prefixLength);
      w.byte(10);
    });
    const last6 = new Uint32Array(4);
    let inV6 = false;
    return {
      begin() {},
      entry(out, c) {
        w = out;
        if (c.version === 4) {
          v4.add(c.v4, c.prefixLength === 32 ? c.v4 : c.v4 + 2 ** (32 - c.prefixLength) - 1);
          return;
        }
        if (!inV6) {
          v4.finish();
          inV6 = true;
        }
        v6.add(c.v6, c.prefixLength === 128 ? c.v6 : lastOfIpv6Network(c.v6, c.prefixLength, last6));
      },
      end(out) {
        w = out;
        v4.finish();
        v6.finish();
      },
    };
  },

  nft(head) {
    let open: IpVersion | 0 = 0;
    let inStatement = 0;
    const close = (w: ChunkWriter) => {
      if (open !== 0) w.ascii("}\n");
      open = 0;
    };
    return {
      begin(w) {
        w.ascii("#!/usr/sbin/nft -f\n");
        w.ascii(commentLines(head, "Load with `nft -f FILE`: one transaction empties and refills the sets; rules using them keep working."));
        w.ascii(`add table ${NFT_TABLE}\n`);
        for (const v of families(head.filters)) {
          w.ascii(`add set ${NFT_TABLE} ${SET_NAMES[v]} { type ipv${v}_addr; flags interval; }\n`);
          w.ascii(`flush set ${NFT_TABLE} ${SET_NAMES[v]}\n`);
        }
      },
      entry(w, c) {
        if (open !== c.version || inStatement === NFT_ELEMENTS_PER_STATEMENT) {
          close(w);
          w.ascii(`add element ${NFT_TABLE} ${SET_NAMES[c.version]} {\n`);
          open = c.version;
          inStatement = 0;
        }
        w.byte(9); // tab
        writeEntry(w, c);
        w.byte(44);
        w.byte(10);
        inStatement++;
      },
      end(w) {
        close(w);
      },
    };
  },

  ipset(head) {
    const todo = families(head.filters);
    let open: IpVersion | 0 = 0;
    const openSection = (w: ChunkWriter, v: IpVersion) => {
      const family = v === 4 ? "inet" : "inet6";
      const name = SET_NAMES[v];
      w.ascii(`create ${name} hash:net family ${family} ${IPSET_PARAMETERS} -exist\n`);
      w.ascii(`create ${name}_next hash:net family ${family} ${IPSET_PARAMETERS} -exist\n`);
      w.ascii(`flush ${name}_next\n`);
      open = v;
      const at = todo.indexOf(v);
      if (at >= 0) todo.splice(at, 1);
    };
    const closeSection = (w: ChunkWriter) => {
      if (open === 0) return;
      const name = SET_NAMES[open];
      w.ascii(`swap ${name}_next ${name}\ndestroy ${name}_next\n`);
      open = 0;
    };
    const names = families(head.filters).map((v) => SET_NAMES[v]);
    const addPrefix = { 4: `add ${SET_NAMES[4]}_next `, 6: `add ${SET_NAMES[6]}_next ` };
    return {
      begin(w) {
        w.ascii(
          commentLines(
            head,
            `Load with \`ipset restore -file FILE\`: fills ${names.map((n) => `${n}_next`).join(" and ")}, then swaps ${names.length > 1 ? "each" : "it"} with ${names.join(" and ")} in one step.`,
          ),
        );
        openSection(w, todo[0]);
      },
      entry(w, c) {
        if (open !== c.version) {
          closeSection(w);
          openSection(w, c.version);
        }
        w.ascii(addPrefix[c.version]);
        writeEntry(w, c);
        w.byte(10);
      },
      end(w) {
        closeSection(w);
        // A family with no entries still replaces its set: with an empty one.
        while (todo.length > 0) {
          openSection(w, todo[0]);
          closeSection(w);
        }
      },
    };
  },

  csv() {
    const categoryText = new Map<number, string>();
    return {
      begin(w) {
        w.ascii("ip,reputationScore,riskLevel,categories,lastSeen\n");
      },
      entry(w, c) {
        writeEntry(w, c);
        w.byte(44);
        w.uint(c.score);
        w.byte(44);
        w.ascii(RISK_LEVELS[c.risk]);
        w.byte(44);
        let text = categoryText.get(c.categories);
        if (text === undefined) {
          text = categoriesFromMask(c.categories).join("|");
          categoryText.set(c.categories, text);
        }
        w.ascii(text);
        w.byte(44);
        if (!Number.isNaN(c.lastSeenMs)) w.isoTime(c.lastSeenMs);
        w.byte(10);
      },
      end() {},
    };
  },
};

// ---------------------------------------------------------------------------------------------------------
// A cursor over plain values (tests, and callers that hold a small list in memory)

export interface BlocklistEntry {
  version: IpVersion;
  /** IPv4: the unsigned value. */
  v4?: number;
  /** IPv6: four words. */
  v6?: ArrayLike<number>;
  /** Default: a single address. */
  prefixLength?: number;
  score?: number;
  risk?: RiskCode;
  categories?: number;
  lastSeenMs?: number;
}

/** A cursor over entries already in blocklist order. */
export function arrayCursor(entries: readonly BlocklistEntry[]): BlocklistCursor {
  let i = -1;
  const c: BlocklistCursor = {
    version: 4,
    v4: 0,
    v6: new Uint32Array(4),
    prefixLength: 32,
    score: 0,
    risk: 0,
    categories: 0,
    lastSeenMs: Number.NaN,
    next() {
      if (++i >= entries.length) return false;
      const e = entries[i];
      c.version = e.version;
      c.v4 = e.v4 ?? 0;
      c.v6 = e.v6 ?? new Uint32Array(4);
      c.prefixLength = e.prefixLength ?? (e.version === 4 ? 32 : 128);
      c.score = e.score ?? 0;
      c.risk = e.risk ?? 0;
      c.categories = e.categories ?? 0;
      c.lastSeenMs = e.lastSeenMs ?? Number.NaN;
      return true;
    },
  };
  return c;
}
