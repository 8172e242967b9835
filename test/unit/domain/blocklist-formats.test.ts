// The blocklist formats (contract 5.10) on crafted entries, byte for byte; the cidr format against a brute-force
// smallest cover; every format the same whatever the chunk size; the nft script through `nft -c -f` and the
// ipset script through `ipset restore` when those tools can run here, and always through a model of their
// grammar (the statements this product writes) that also computes what the sets end up holding.

import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChunkWriter, chunksToString } from "../../../src/domain/blocklist/chunk-writer";
import {
  type BlocklistEntry,
  type BlocklistHead,
  CONTENT_TYPES,
  NFT_ELEMENTS_PER_STATEMENT,
  arrayCursor,
  createRenderer,
  renderChunks,
  renderToString,
} from "../../../src/domain/blocklist/formats";
import { BLOCKLIST_FORMATS, type BlocklistFormat, blocklistFilters, filtersKey, parseBlocklistParams } from "../../../src/domain/blocklist/query";
import { maskOf } from "../../../src/domain/categories";
import { AppError } from "../../../src/domain/errors";
import { formatIpv4, formatIpv6, parseCidr, parseIp, type Ipv6 } from "../../../src/domain/ip";
import { NetworkNamespace, toolRunsIn } from "../../support/netns";
import { rng } from "../../support/random";

const T1 = Date.parse("2026-11-20T10:00:00.000Z");
const T2 = Date.parse("2026-11-21T07:59:59.123Z");
const GENERATED = Date.parse("2026-11-21T08:00:00.000Z");

const v4 = (text: string, more: Partial<BlocklistEntry> = {}): BlocklistEntry => {
  const cidr = parseCidr(text);
  return { version: 4, v4: (cidr.network as { value: number }).value, prefixLength: cidr.prefixLength, ...more };
};
const v6 = (text: string, more: Partial<BlocklistEntry> = {}): BlocklistEntry => {
  const cidr = parseCidr(text);
  return { version: 6, v6: (cidr.network as Ipv6).words, prefixLength: cidr.prefixLength, ...more };
};

/** IPv4 first, each family ascending numerically (198.51.100.2 before .10; 2001:db8::5 before ::1:0). */
const CRAFTED: BlocklistEntry[] = [
  v4("10.0.0.1", { score: 14, risk: 3, categories: maskOf(["SPAM", "PHISHING", "MALWARE"]), lastSeenMs: T1 }),
  v4("198.51.100.2", { score: 26, risk: 2, categories: maskOf(["BRUTE_FORCE", "SSH"]), lastSeenMs: T2 }),
  v4("198.51.100.3", { score: 51, risk: 1, categories: maskOf(["SSH"]), lastSeenMs: T2 }),
  v4("198.51.100.10", { score: 51, risk: 1, categories: maskOf(["SSH"]), lastSeenMs: Number.NaN }),
  v4("203.0.113.0/24", { score: 20, risk: 2, categories: maskOf(["DDOS"]), lastSeenMs: T1 }),
  v6("2001:db8::5", { score: 26, risk: 2, categories: maskOf(["PORT_SCAN", "DDOS"]), lastSeenMs: T1 }),
  v6("2001:db8::1:0", { score: 51, risk: 1, categories: maskOf(["SSH"]), lastSeenMs: T2 }),
  v6("2001:db8:1::/48", { score: 0, risk: 3, categories: maskOf(["HACKING"]), lastSeenMs: T2 }),
];

const headOf = (entries: readonly BlocklistEntry[], filters = blocklistFilters()): BlocklistHead => ({ generatedAtMs: GENERATED, count: entries.length, filters });
const render = (format: BlocklistFormat, entries: readonly BlocklistEntry[] = CRAFTED, filters = blocklistFilters()) =>
  renderToString(format, headOf(entries, filters), arrayCursor(entries));

// ---------------------------------------------------------------------------------------------------------
// Exact bodies

describe("exact bodies on crafted entries", () => {
  test("txt: one entry per line, networks in CIDR form, ending with a newline", () => {
    expect(render("txt")).toBe(
      "10.0.0.1\n198.51.100.2\n198.51.100.3\n198.51.100.10\n203.0.113.0/24\n2001:db8::5\n2001:db8::1:0\n2001:db8:1::/48\n",
    );
  });

  test("cidr: the smallest cover, prefix always written", () => {
    expect(render("cidr")).toBe(
      "10.0.0.1/32\n198.51.100.2/31\n198.51.100.10/32\n203.0.113.0/24\n2001:db8::5/128\n2001:db8::1:0/128\n2001:db8:1::/48\n",
    );
  });

  test("json: envelope, generatedAt, count, normalized filters, ips as strings", () => {
    const filters = blocklistFilters({ categories: ["SSH", "SPAM"], minimumRisk: "HIGH", ipVersion: null });
    const body = render("json", CRAFTED, filters);
    expect(body).toBe(
      '{"success":true,"data":{"generatedAt":"2026-11-21T08:00:00.000Z","count":8,' +
        '"filters":{"category":["SPAM","SSH"],"riskLevel":"HIGH","ipVersion":null},' +
        '"ips":["10.0.0.1","198.51.100.2","198.51.100.3","198.51.100.10","203.0.113.0/24","2001:db8::5","2001:db8::1:0","2001:db8:1::/48"]}}',
    );
    expect(JSON.parse(body).data.count).toBe(JSON.parse(body).data.ips.length);
  });

  test("csv: header, categories joined with |, empty lastSeen when unknown", () => {
    expect(render("csv")).toBe(
      "ip,reputationScore,riskLevel,categories,lastSeen\n" +
        "10.0.0.1,14,CRITICAL,SPAM|PHISHING|MALWARE,2026-11-20T10:00:00.000Z\n" +
        "198.51.100.2,26,HIGH,BRUTE_FORCE|SSH,2026-11-21T07:59:59.123Z\n" +
        "198.51.100.3,51,MEDIUM,SSH,2026-11-21T07:59:59.123Z\n" +
        "198.51.100.10,51,MEDIUM,SSH,\n" +
        "203.0.113.0/24,20,HIGH,DDOS,2026-11-20T10:00:00.000Z\n" +
        "2001:db8::5,26,HIGH,PORT_SCAN|DDOS,2026-11-20T10:00:00.000Z\n" +
        "2001:db8::1:0,51,MEDIUM,SSH,2026-11-21T07:59:59.123Z\n" +
        "2001:db8:1::/48,0,CRITICAL,HACKING,2026-11-21T07:59:59.123Z\n",
    );
  });

  test("nft: sets created if missing, flushed and refilled in one script", () => {
    expect(render("nft")).toBe(
      "#!/usr/sbin/nft -f\n" +
        "# abuse-intel blocklist generated at 2026-11-21T08:00:00.000Z: 8 entries (riskLevel MEDIUM and above, all categories, IPv4 and IPv6)\n" +
        "# Load with `nft -f FILE`: one transaction empties and refills the sets; rules using them keep working.\n" +
        "add table inet abuse_intel\n" +
        "add set inet abuse_intel abuse_intel_v4 { type ipv4_addr; flags interval; }\n" +
        "flush set inet abuse_intel abuse_intel_v4\n" +
        "add set inet abuse_intel abuse_intel_v6 { type ipv6_addr; flags interval; }\n" +
        "flush set inet abuse_intel abuse_intel_v6\n" +
        "add element inet abuse_intel abuse_intel_v4 {\n" +
        "\t10.0.0.1,\n\t198.51.100.2,\n\t198.51.100.3,\n\t198.51.100.10,\n\t203.0.113.0/24,\n" +
        "}\n" +
        "add element inet abuse_intel abuse_intel_v6 {\n" +
        "\t2001:db8::5,\n\t2001:db8::1:0,\n\t2001:db8:1::/48,\n" +
        "}\n",
    );
  });

  test("ipset: staging sets filled, then swapped with the live ones", () => {
    expect(render("ipset")).toBe(
      "# abuse-intel blocklist generated at 2026-11-21T08:00:00.000Z: 8 entries (riskLevel MEDIUM and above, all categories, IPv4 and IPv6)\n" +
        "# Load with `ipset restore -file FILE`: fills abuse_intel_v4_next and abuse_intel_v6_next, then swaps each with abuse_intel_v4 and abuse_intel_v6 in one step.\n" +
        "create abuse_intel_v4 hash:net family inet hashsize 1024 maxelem 16777216 -exist\n" +
        "create abuse_intel_v4_next hash:net family inet hashsize 1024 maxelem 16777216 -exist\n" +
        "flush abuse_intel_v4_next\n" +
        "add abuse_intel_v4_next 10.0.0.1\nadd abuse_intel_v4_next 198.51.100.2\nadd abuse_intel_v4_next 198.51.100.3\n" +
        "add abuse_intel_v4_next 198.51.100.10\nadd abuse_intel_v4_next 203.0.113.0/24\n" +
        "swap abuse_intel_v4_next abuse_intel_v4\n" +
        "destroy abuse_intel_v4_next\n" +
        "create abuse_intel_v6 hash:net family inet6 hashsize 1024 maxelem 16777216 -exist\n" +
        "create abuse_intel_v6_next hash:net family inet6 hashsize 1024 maxelem 16777216 -exist\n" +
        "flush abuse_intel_v6_next\n" +
        "add abuse_intel_v6_next 2001:db8::5\nadd abuse_intel_v6_next 2001:db8::1:0\nadd abuse_intel_v6_next 2001:db8:1::/48\n" +
        "swap abuse_intel_v6_next abuse_intel_v6\n" +
        "destroy abuse_intel_v6_next\n",
    );
  });

  test("an empty list: empty txt, cidr and csv-with-header; valid scripts that empty the sets", () => {
    expect(render("txt", [])).toBe("");
    expect(render("cidr", [])).toBe("");
    expect(render("csv", [])).toBe("ip,reputationScore,riskLevel,categories,lastSeen\n");
    expect(render("json", [])).toBe(
      '{"success":true,"data":{"generatedAt":"2026-11-21T08:00:00.000Z","count":0,"filters":{"category":null,"riskLevel":"MEDIUM","ipVersion":null},"ips":[]}}',
    );
    const nft = render("nft", []);
    expect(nft).not.toContain("add element");
    expect(nft).toContain("flush set inet abuse_intel abuse_intel_v4\n");
    expect(nft).toContain("flush set inet abuse_intel abuse_intel_v6\n");
    const ipset = render("ipset", []);
    expect(ipset).toContain("swap abuse_intel_v4_next abuse_intel_v4\n");
    expect(ipset).toContain("swap abuse_intel_v6_next abuse_intel_v6\n");
    expect(ipset).not.toContain("\nadd ");
  });

  test("one family: the scripts leave the other family's set alone", () => {
    const only4 = CRAFTED.filter((e) => e.version === 4);
    const filters = blocklistFilters({ ipVersion: 4 });
    const nft = render("nft", only4, filters);
    expect(nft).not.toContain("abuse_intel_v6");
    expect(nft).toContain("IPv4 only");
    expect(render("ipset", only4, filters)).not.toContain("abuse_intel_v6");
    const only6 = CRAFTED.filter((e) => e.version === 6);
    const ipset6 = render("ipset", only6, blocklistFilters({ ipVersion: 6 }));
    expect(ipset6).not.toContain("abuse_intel_v4");
    expect(ipset6).toContain("add abuse_intel_v6_next 2001:db8::5\n");
  });

  test("each format's content type", () => {
    expect(BLOCKLIST_FORMATS.map((f) => [f, createRenderer(f, headOf([]), arrayCursor([])).contentType])).toEqual([
      ["json", "application/json; charset=utf-8"],
      ["txt", "text/plain; charset=utf-8"],
      ["cidr", "text/plain; charset=utf-8"],
      ["nft", "text/plain; charset=utf-8"],
      ["ipset", "text/plain; charset=utf-8"],
      ["csv", "text/csv; charset=utf-8"],
    ]);
    expect(Object.keys(CONTENT_TYPES).sort()).toEqual([...BLOCKLIST_FORMATS].sort());
  });
});

// ---------------------------------------------------------------------------------------------------------
// Chunking and byte writing

/** Random distinct entries in blocklist order: IPv4 addresses, then IPv6 addresses. */
function randomEntries(r: () => number, n4: number, n6: number): BlocklistEntry[] {
  const a = [...new Set(Array.from({ length: n4 }, () => r()))].sort((x, y) => x - y);
  const b = [...new Set(Array.from({ length: n6 }, () => r()))].sort((x, y) => x - y);
  return [
    ...a.map((value, i): BlocklistEntry => ({ version: 4, v4: value, score: i % 80, risk: (i % 4) as 0, categories: i & 0xffff, lastSeenMs: T1 + i })),
    ...b.map((low, i): BlocklistEntry => ({ version: 6, v6: [0x20010db8, i, 0, low], score: i % 80, risk: (i % 4) as 0, categories: i & 0xffff, lastSeenMs: T2 })),
  ];
}

describe("chunks", () => {
  const entries = randomEntries(rng(1), 3000, 500);
  test.each([...BLOCKLIST_FORMATS])("%s: the same bytes whatever the chunk size, and chunks of about that size", (format) => {
    const whole = render(format, entries);
    for (const size of [16, 1000, 64 * 1024]) {
      const chunks = [...renderChunks(createRenderer(format, headOf(entries), arrayCursor(entries)), size)];
      expect(chunksToString(chunks)).toBe(whole);
      for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBeGreaterThanOrEqual(size);
      for (const chunk of chunks) expect(chunk.length).toBeLessThan(size + 16 * 1024);
    }
  });

  test("times format as toISOString does", () => {
    const r = rng(11);
    const times = [
      0, 1, 999, 86_399_999, 86_400_000, -1, -86_400_001, Date.parse("2000-02-29T23:59:59.999Z"), Date.parse("2100-03-01T00:00:00.000Z"),
      Date.parse("1900-02-28T12:00:00.010Z"), Date.parse("0000-01-01T00:00:00.000Z"), Date.parse("9999-12-31T23:59:59.999Z"),
      Date.parse("+010000-01-01T00:00:00.000Z"), Date.parse("-000001-12-31T00:00:00.000Z"),
      // Uniform over the years 0000..9999, and over the last year of 2026.
      ...Array.from({ length: 20_000 }, () => -62_167_219_200_000 + ((r() * 65_536 + (r() & 0xffff)) % 315_569_520_000_000)),
      ...Array.from({ length: 20_000 }, () => Date.parse("2026-01-01T00:00:00Z") + (r() % (365 * 86_400_000))),
    ].filter((t) => Number.isFinite(new Date(t).getTime()));
    const w = new ChunkWriter(1 << 22);
    times.forEach((t) => {
      w.isoTime(t);
      w.byte(10);
    });
    expect(chunksToString([w.take()])).toBe(times.map((t) => `${new Date(t).toISOString()}\n`).join(""));
  });

  test("every IPv4 address formats as formatIpv4 does", () => {
    const w = new ChunkWriter(1 << 20);
    const r = rng(9);
    const values = [0, 1, 9, 10, 99, 100, 255, 256, 0x01020304, 0x0a000001, 0xffffffff, ...Array.from({ length: 5000 }, () => r())];
    const expected = values.map((v) => formatIpv4(v)).join("\n");
    values.forEach((v, i) => {
      if (i > 0) w.byte(10);
      w.ipv4(v);
    });
    expect(chunksToString([w.take()])).toBe(expected);
  });
});

// ---------------------------------------------------------------------------------------------------------
// cidr against a brute-force smallest cover

/**
 * The smallest cover of a set of offsets in a universe of 2^8 addresses, by merging sibling blocks bottom-up:
 * two aligned blocks of one size that together form the aligned block of twice the size become that block.
 * What remains is the set of maximal aligned blocks, the unique smallest cover.
 */
function bruteForceCover(offsets: Set<number>): Array<[offset: number, hostBits: number]> {
  let level = new Set(offsets);
  const done: Array<[number, number]> = [];
  for (let bits = 0; bits <= 8; bits++) {
    const size = 2 ** bits;
    const next = new Set<number>();
    for (const o of level) {
      const sibling = o ^ size;
      if (bits < 8 && level.has(sibling)) {
        next.add(Math.min(o, sibling));
      } else done.push([o, bits]);
    }
    level = next;
  }
  return done.sort((a, b) => a[0] - b[0]);
}

describe("cidr aggregation is exact", () => {
  const r = rng(5);
  const base4 = parseIp("198.51.100.0");
  const base6 = parseIp("2001:db8::ab00") as Ipv6;
  for (let trial = 0; trial < 40; trial++) {
    const density = [0.05, 0.5, 0.9, 1][trial % 4];
    const set4 = new Set<number>();
    const set6 = new Set<number>();
    for (let o = 0; o < 256; o++) {
      if (r() / 2 ** 32 < density) set4.add(o);
      if (r() / 2 ** 32 < density) set6.add(o);
    }
    test(`trial ${trial}: ${set4.size} IPv4 and ${set6.size} IPv6 addresses`, () => {
      const sorted4 = [...set4].sort((a, b) => a - b);
      const sorted6 = [...set6].sort((a, b) => a - b);
      const entries: BlocklistEntry[] = [
        ...sorted4.map((o): BlocklistEntry => ({ version: 4, v4: (base4 as { value: number }).value + o })),
        ...sorted6.map((o): BlocklistEntry => ({ version: 6, v6: [base6.words[0], base6.words[1], base6.words[2], base6.words[3] + o] })),
      ];
      const expected =
        bruteForceCover(set4)
          .map(([o, bits]) => `${formatIpv4((base4 as { value: number }).value + o)}/${32 - bits}\n`)
          .join("") +
        bruteForceCover(set6)
          .map(([o, bits]) => `${formatIpv6([base6.words[0], base6.words[1], base6.words[2], base6.words[3] + o])}/${128 - bits}\n`)
          .join("");
      expect(render("cidr", entries)).toBe(expected);
    });
  }
});

// ---------------------------------------------------------------------------------------------------------
// nft and ipset: the tools where they run, a model of the grammar always

const scratch = mkdtempSync(join(tmpdir(), "abuse-intel-blocklist-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// Both tools run in a network namespace of this file's own: an ipset restore never lands in the host's sets.
const firewall = NetworkNamespace.create("formats");
afterAll(() => firewall?.destroy());
writeFileSync(join(scratch, "probe"), "add table inet abuse_intel_probe\n");
const NFT = toolRunsIn(firewall, "nft", ["-c", "-f", join(scratch, "probe")], "nft -c on the nft script");
const IPSET = toolRunsIn(firewall, "ipset", ["list", "-n"], "ipset restore of the ipset script");

/** An IPv6 prefix or address as [first, last] BigInts; IPv4 as numbers in BigInt. */
function interval(element: string, family: 4 | 6): [bigint, bigint] {
  const cidr = parseCidr(element);
  if (cidr.version !== family) throw new Error(`${element} is not IPv${family}`);
  const bits = family === 4 ? 32 : 128;
  const first = family === 4 ? BigInt((cidr.network as { value: number }).value) : (cidr.network as Ipv6).words.reduce((acc, w) => (acc << 32n) | BigInt(w), 0n);
  return [first, first + (1n << BigInt(bits - cidr.prefixLength)) - 1n];
}

/**
 * The statements this product writes to nft, checked line by line, and what the sets hold afterwards. Throws on
 * anything else: an unknown statement, an empty `{ }`, an element of the wrong family, overlapping intervals.
 */
function nftModel(script: string): Map<string, string[]> {
  const sets = new Map<string, { family: 4 | 6; elements: string[] }>();
  let tableMade = false;
  let open: { name: string; count: number } | null = null;
  for (const line of script.split("\n").slice(0, -1)) {
    if (open !== null) {
      if (line === "}") {
        if (open.count === 0) throw new Error("an empty element list");
        open = null;
        continue;
      }
      const m = /^\t([0-9a-f:.]+(?:\/\d+)?),$/.exec(line);
      if (!m) throw new Error(`not an element line: ${JSON.stringify(line)}`);
      const set = sets.get(open.name)!;
      interval(m[1], set.family);
      set.elements.push(m[1]);
      open.count++;
      continue;
    }
    if (line.startsWith("#")) continue;
    let m: RegExpExecArray | null;
    if (line === "add table inet abuse_intel") tableMade = true;
    else if ((m = /^add set inet abuse_intel (abuse_intel_v[46]) \{ type ipv([46])_addr; flags interval; \}$/.exec(line))) {
      if (!tableMade) throw new Error("set before table");
      if (m[1] !== `abuse_intel_v${m[2]}`) throw new Error("set name and type disagree");
      if (!sets.has(m[1])) sets.set(m[1], { family: Number(m[2]) as 4 | 6, elements: [] });
    } else if ((m = /^flush set inet abuse_intel (abuse_intel_v[46])$/.exec(line))) {
      const set = sets.get(m[1]);
      if (!set) throw new Error(`flush of unknown set ${m[1]}`);
      set.elements = [];
    } else if ((m = /^add element inet abuse_intel (abuse_intel_v[46]) \{$/.exec(line))) {
      if (!sets.has(m[1])) throw new Error(`elements for unknown set ${m[1]}`);
      open = { name: m[1], count: 0 };
    } else throw new Error(`unknown statement: ${JSON.stringify(line)}`);
  }
  if (open !== null) throw new Error("unclosed element list");
  if (!script.endsWith("\n") && script !== "") throw new Error("no final newline");
  const out = new Map<string, string[]>();
  for (const [name, set] of sets) {
    const intervals = set.elements.map((e) => interval(e, set.family)).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (let i = 1; i < intervals.length; i++) if (intervals[i][0] <= intervals[i - 1][1]) throw new Error(`overlapping elements in ${name}`);
    out.set(name, set.elements);
  }
  return out;
}

/** `ipset restore` semantics for the commands this product writes; returns the sets left with their members. */
function ipsetModel(script: string): Map<string, string[]> {
  const sets = new Map<string, { family: 4 | 6; members: string[] }>();
  for (const line of script.split("\n").slice(0, -1)) {
    if (line.startsWith("#")) continue;
    let m: RegExpExecArray | null;
    if ((m = /^create (\S+) hash:net family (inet6?) hashsize 1024 maxelem 16777216 -exist$/.exec(line))) {
      if (m[1].length > 31) throw new Error("set name too long");
      const family = m[2] === "inet" ? 4 : 6;
      const existing = sets.get(m[1]);
      if (existing && existing.family !== family) throw new Error("create -exist with other parameters");
      if (!existing) sets.set(m[1], { family, members: [] });
    } else if ((m = /^flush (\S+)$/.exec(line))) {
      const set = sets.get(m[1]);
      if (!set) throw new Error(`flush of unknown set ${m[1]}`);
      set.members = [];
    } else if ((m = /^add (\S+) (\S+)$/.exec(line))) {
      const set = sets.get(m[1]);
      if (!set) throw new Error(`add to unknown set ${m[1]}`);
      interval(m[2], set.family);
      set.members.push(m[2]);
    } else if ((m = /^swap (\S+) (\S+)$/.exec(line))) {
      const a = sets.get(m[1]);
      const b = sets.get(m[2]);
      if (!a || !b || a.family !== b.family) throw new Error(`cannot swap ${m[1]} and ${m[2]}`);
      sets.set(m[1], b);
      sets.set(m[2], a);
    } else if ((m = /^destroy (\S+)$/.exec(line))) {
      if (!sets.delete(m[1])) throw new Error(`destroy of unknown set ${m[1]}`);
    } else throw new Error(`unknown command: ${JSON.stringify(line)}`);
  }
  return new Map([...sets].map(([name, set]) => [name, set.members]));
}

function nftAccepts(script: string): { ok: boolean; stderr: string } {
  const file = join(scratch, "list.nft");
  writeFileSync(file, script);
  const r = firewall!.run("nft", ["-c", "-f", file]);
  return { ok: r.status === 0, stderr: r.stderr };
}

/** Loads the script with `ipset restore` under unique set names, returns each set's members, and cleans up. */
function ipsetLoads(script: string): Map<string, string[]> {
  const tag = `t${process.pid % 100000}`;
  const renamed = script.replaceAll("abuse_intel_", `ai${tag}_`);
  const names = [`ai${tag}_v4`, `ai${tag}_v6`, `ai${tag}_v4_next`, `ai${tag}_v6_next`];
  const file = join(scratch, "list.ipset");
  writeFileSync(file, renamed);
  try {
    const r = firewall!.run("ipset", ["restore", "-file", file]);
    if (r.status !== 0) throw new Error(`ipset restore failed: ${r.stderr}`);
    const out = new Map<string, string[]>();
    for (const name of names) {
      const list = firewall!.run("ipset", ["list", name]);
      if (list.status !== 0) continue;
      const members = list.stdout.split("Members:\n")[1].split("\n").filter(Boolean);
      out.set(name.replace(`ai${tag}_`, "abuse_intel_"), members);
    }
    return out;
  } finally {
    for (const name of names) firewall!.run("ipset", ["destroy", name]);
  }
}

const textOf = (e: BlocklistEntry): string =>
  e.version === 4
    ? `${formatIpv4(e.v4!)}${e.prefixLength !== undefined && e.prefixLength !== 32 ? `/${e.prefixLength}` : ""}`
    : `${formatIpv6(e.v6!)}${e.prefixLength !== undefined && e.prefixLength !== 128 ? `/${e.prefixLength}` : ""}`;
const sortedStrings = (a: string[]) => [...a].sort();

describe("nft script", () => {
  const big = randomEntries(rng(3), NFT_ELEMENTS_PER_STATEMENT + 5, 20);
  const cases: Array<[string, BlocklistEntry[], ReturnType<typeof blocklistFilters>]> = [
    ["crafted", CRAFTED, blocklistFilters()],
    ["empty", [], blocklistFilters()],
    ["IPv4 only", CRAFTED.filter((e) => e.version === 4), blocklistFilters({ ipVersion: 4 })],
    ["IPv6 only, empty", [], blocklistFilters({ ipVersion: 6 })],
    [`${big.length} entries (two statements for IPv4)`, big, blocklistFilters()],
  ];
  test.each(cases)("%s: its grammar holds and the sets hold exactly the entries", (_, entries, filters) => {
    const script = render("nft", entries, filters);
    const sets = nftModel(script);
    for (const v of filters.ipVersion === null ? [4, 6] : [filters.ipVersion]) {
      const expected = entries.filter((e) => e.version === v).map(textOf);
      expect(sets.get(`abuse_intel_v${v}`)).toEqual(expected);
    }
    expect(sets.size).toBe(filters.ipVersion === null ? 2 : 1);
  });
  test("a statement holds at most 10,000 elements", () => {
    const script = render("nft", big);
    expect(script.split("\n").filter((l) => l.startsWith("add element inet abuse_intel abuse_intel_v4 {"))).toHaveLength(2);
  });
  test("the grammar model refuses what nft refuses", () => {
    expect(() => nftModel("add table inet abuse_intel\nadd set inet abuse_intel abuse_intel_v4 { type ipv4_addr; flags interval; }\nadd element inet abuse_intel abuse_intel_v4 {\n}\n")).toThrow("empty");
    expect(() =>
      nftModel("add table inet abuse_intel\nadd set inet abuse_intel abuse_intel_v4 { type ipv4_addr; flags interval; }\nadd element inet abuse_intel abuse_intel_v4 {\n\t10.0.0.0/24,\n\t10.0.0.5,\n}\n"),
    ).toThrow("overlapping");
    expect(() => nftModel("add table inet abuse_intel\nadd set inet abuse_intel abuse_intel_v4 { type ipv4_addr; flags interval; }\nadd element inet abuse_intel abuse_intel_v4 {\n\t2001:db8::1,\n}\n")).toThrow();
  });
  test.skipIf(!NFT).each(cases)("nft -c -f accepts it: %s", (_, entries, filters) => {
    const result = nftAccepts(render("nft", entries, filters));
    expect(result.stderr).toBe("");
    expect(result.ok).toBe(true);
  });
  test.skipIf(!NFT)("nft -c -f refuses overlapping elements (so the check above can fail)", () => {
    const bad = render("nft", [v4("10.0.0.0/24"), v4("10.0.0.5")]);
    expect(nftAccepts(bad).ok).toBe(false);
  });
});

describe("ipset script", () => {
  const cases: Array<[string, BlocklistEntry[], ReturnType<typeof blocklistFilters>]> = [
    ["crafted", CRAFTED, blocklistFilters()],
    ["empty", [], blocklistFilters()],
    ["IPv6 only", CRAFTED.filter((e) => e.version === 6), blocklistFilters({ ipVersion: 6 })],
    ["3,000 + 200 random", randomEntries(rng(4), 3000, 200), blocklistFilters()],
  ];
  test.each(cases)("%s: the model of ipset restore leaves exactly the entries in the live sets", (_, entries, filters) => {
    const sets = ipsetModel(render("ipset", entries, filters));
    const families = filters.ipVersion === null ? [4, 6] : [filters.ipVersion];
    expect([...sets.keys()].sort()).toEqual(families.map((v) => `abuse_intel_v${v}`));
    for (const v of families) expect(sets.get(`abuse_intel_v${v}`)).toEqual(entries.filter((e) => e.version === v).map(textOf));
  });
  test.skipIf(!IPSET).each(cases)("ipset restore loads it (twice: the swap replaces the old list): %s", (_, entries, filters) => {
    const script = render("ipset", entries, filters);
    const families = filters.ipVersion === null ? [4, 6] : [filters.ipVersion];
    const loaded = ipsetLoads(script + script);
    expect([...loaded.keys()].sort()).toEqual(families.map((v) => `abuse_intel_v${v}`));
    for (const v of families) {
      // ipset lists members in hash order and writes a /32 or /128 as the bare address.
      expect(sortedStrings(loaded.get(`abuse_intel_v${v}`)!)).toEqual(sortedStrings(entries.filter((e) => e.version === v).map(textOf)));
    }
  });
});

// ---------------------------------------------------------------------------------------------------------
// Parameters

describe("parameters", () => {
  test("defaults: every category, MEDIUM and above, both families, json", () => {
    const { filters, format } = parseBlocklistParams({});
    expect(format).toBe("json");
    expect(filters).toEqual({ categories: null, categoriesMask: 0, minimumRisk: "MEDIUM", minimumRiskCode: 1, ipVersion: null, maximumScore: 100 });
  });

  test("the same list asked in different words has one key", () => {
    const a = parseBlocklistParams({ category: "ssh,Brute-Force", riskLevel: "high", ipVersion: "4", format: "TXT" });
    const b = parseBlocklistParams({ category: ["BRUTE_FORCE", "SSH", "ssh"], riskLevel: "HIGH", ipVersion: "4", format: "txt" });
    expect(a).toEqual(b);
    expect(a.filters.categories).toEqual(["BRUTE_FORCE", "SSH"]);
    expect(filtersKey(a.filters)).toBe(filtersKey(b.filters));
    expect(filtersKey(a.filters)).not.toBe(filtersKey(parseBlocklistParams({ category: "ssh", riskLevel: "high", ipVersion: "4" }).filters));
  });

  test("empty values count as absent", () => {
    expect(parseBlocklistParams({ category: "", riskLevel: "", ipVersion: "", format: "" })).toEqual(parseBlocklistParams({}));
  });

  test.each([
    [{ format: "xml" }, "format", "allowed values: json, txt, cidr, nft, ipset, csv"],
    [{ riskLevel: "SEVERE" }, "riskLevel", "allowed values: LOW, MEDIUM, HIGH, CRITICAL"],
    [{ ipVersion: "5" }, "ipVersion", "allowed values: 4, 6"],
    [{ ipVersion: "v4" }, "ipVersion", "allowed values: 4, 6"],
    [{ category: "ssh,bogus" }, "category", "allowed values: SPAM, BRUTE_FORCE"],
    [{ category: "," }, "category", "at least one category"],
    [{ format: ["txt", "csv"] }, "format", "must be given once"],
  ])("%j is refused naming the allowed values", (params, field, message) => {
    try {
      parseBlocklistParams(params);
      throw new Error("accepted");
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).errorCode).toBe("validation_failed");
      expect((error as AppError).details).toHaveLength(1);
      expect((error as AppError).details![0].field).toBe(field);
      expect((error as AppError).details![0].message).toContain(message);
    }
  });

  test("every bad parameter is named in one error", () => {
    try {
      parseBlocklistParams({ format: "x", riskLevel: "y", ipVersion: "z", category: "w" });
      throw new Error("accepted");
    } catch (error) {
      expect((error as AppError).details!.map((d) => d.field)).toEqual(["category", "riskLevel", "ipVersion", "format"]);
    }
  });
});
