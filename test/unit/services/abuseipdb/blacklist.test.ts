// `/api/v2/blacklist` streamed from a cached order (contract 13): the same bytes as the answer built whole before,
// for every kind of entry and parameter, and the work a request costs when the list has not changed.

import { beforeEach, describe, expect, test } from "bun:test";
import { ManualClock } from "../../../../src/domain/clock";
import { type Cidr, type Ip, ipv4FromNumber, tryParseCidr, tryParseIp } from "../../../../src/domain/ip";
import { CidrSet } from "../../../../src/index/cidr-set";
import { ReputationIndex } from "../../../../src/index/reputation-index";
import { Blacklist, type BlacklistQuery } from "../../../../src/services/abuseipdb/blacklist";
import { abuseIpdbTime } from "../../../../src/services/abuseipdb/wire";
import type { EnrichmentResult } from "../../../../src/services/enrichment/enrichment";
import { rngUnit } from "../../../support/random";
import { referenceBody } from "./blacklist-reference";

const NOW = Date.parse("2026-11-21T08:00:00Z");
const COUNTRIES = ["US", "DE", "CN", null] as const;

const cidr = (text: string): Cidr => {
  const c = tryParseCidr(text);
  if (typeof c === "string") throw new Error(c);
  return c;
};
const address = (text: string): Ip => {
  const ip = tryParseIp(text);
  if (typeof ip === "string") throw new Error(ip);
  return ip;
};
const record = (score: number, lastSeenMs: number) => ({ reputationScore: score, totalReports: 1, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: NOW - 86_400_000, lastSeenMs });

/** A country per address, from its last word: the same answer every time, some unknown. */
const countryOf = (ip: Ip): string | null => COUNTRIES[(ip.version === 4 ? ip.value : ip.words[3]) % COUNTRIES.length];

interface World {
  index: ReputationIndex;
  allowlist: CidrSet;
  blacklist: Blacklist;
  lookups: number;
  tables: unknown[];
  allowlistChanged: () => void;
}

function world(chunkSize = 256): World {
  const next = rngUnit(7);
  const index = new ReputationIndex();
  // Scores over the whole range, times with ties (whole minutes) and some never reported.
  const lastSeen = () => (next() < 0.05 ? Number.NaN : NOW - Math.floor(next() * 60) * 60_000 - (next() < 0.3 ? 0 : 1234));
  for (let k = 0; k < 3000; k++) index.upsert(ipv4FromNumber(0x0b000000 + Math.floor(next() * 0x00ffffff)), record(Math.floor(next() * 101), lastSeen()));
  for (let k = 0; k < 300; k++) index.upsert(address(`2001:db8:${Math.floor(next() * 65536).toString(16)}::${Math.floor(next() * 65536).toString(16)}`), record(Math.floor(next() * 101), lastSeen()));
  // Listed networks, some holding listed addresses, one cut by the allowlist.
  for (const [text, score] of [["11.2.0.0/16", 40], ["11.3.4.0/24", 10], ["11.200.0.0/20", 70], ["2001:db8:100::/48", 20], ["2001:db8:8000::/40", 60]] as const) {
    index.upsertNetwork(cidr(text), record(score, NOW - 3_600_000));
  }
  const allowlist = new CidrSet();
  allowlist.add(cidr("11.200.4.0/24"), 1);
  allowlist.add(cidr("11.100.0.0/16"), 2);
  allowlist.add(cidr("2001:db8:8000::/44"), 3);
  const listeners: (() => void)[] = [];
  const w: World = {
    index,
    allowlist,
    lookups: 0,
    tables: [],
    allowlistChanged: () => listeners.forEach((l) => l()),
    blacklist: null as unknown as Blacklist,
  };
  w.blacklist = new Blacklist({
    index,
    allowlist: { set: allowlist, onChange: (l) => void listeners.push(l) },
    enrichment: {
      lookup: (ip) => {
        w.lookups++;
        return { countryCode: countryOf(ip) } as EnrichmentResult;
      },
      rangeTables: () => w.tables as never,
    },
    clock: new ManualClock(NOW),
    expireDue: () => {},
    chunkSize,
  });
  return w;
}

const query = (q: Partial<BlacklistQuery> = {}): BlacklistQuery => ({ confidenceMinimum: 25, limit: 10_000, ipVersion: null, onlyCountries: null, exceptCountries: null, plaintext: false, ...q });

async function text(body: Uint8Array | ReadableStream<Uint8Array>): Promise<string> {
  return body instanceof Uint8Array ? new TextDecoder().decode(body) : await new Response(body).text();
}

let w: World;
beforeEach(() => {
  w = world();
});

describe("the streamed answer", () => {
  test("is byte for byte the answer built whole, for every combination of parameters", async () => {
    const sets = [null, new Set(["US"]), new Set(["ZZ"]), new Set(["US", "DE"])];
    let compared = 0;
    for (const confidenceMinimum of [25, 50, 90, 100]) {
      for (const ipVersion of [null, 4, 6] as const) {
        for (const limit of [1, 7, 500, 10_000_000]) {
          for (const onlyCountries of sets) {
            for (const exceptCountries of [null, new Set(["CN"]), new Set(["US", "ZZ"])]) {
              for (const plaintext of [false, true]) {
                const q = query({ confidenceMinimum, ipVersion, limit, onlyCountries, exceptCountries, plaintext });
                const { generatedAt, body } = w.blacklist.answer(q);
                expect(generatedAt).toBe(abuseIpdbTime(NOW));
                expect(await text(body)).toBe(referenceBody(w.index, w.allowlist, countryOf, q, generatedAt));
                compared++;
              }
            }
          }
        }
      }
    }
    expect(compared).toBe(1152);
  });

  test("lists networks, IPv6, unknown countries and never-reported entries as before", async () => {
    const { body } = w.blacklist.answer(query({ limit: 10_000_000 }));
    const { data } = JSON.parse(await text(body)) as { data: { ipAddress: string; countryCode: string | null; lastReportedAt: string | null }[] };
    expect(data.some((e) => e.ipAddress === "11.3.4.0/24")).toBe(true);
    expect(data.some((e) => e.ipAddress === "2001:db8:100::/48")).toBe(true);
    // The allowlisted /24 cut out of a listed /20: the blocks around it.
    expect(data.some((e) => e.ipAddress === "11.200.0.0/22")).toBe(true);
    expect(data.some((e) => e.ipAddress.startsWith("11.200.4."))).toBe(false);
    expect(data.some((e) => e.countryCode === null)).toBe(true);
    expect(data.some((e) => e.lastReportedAt === null)).toBe(true);
  });

  test("an empty list: an empty JSON array, an empty plaintext body", async () => {
    const empty = world();
    const none = new Set(["ZZ"]);
    expect(await text(empty.blacklist.answer(query({ onlyCountries: none })).body)).toBe(`{"meta":{"generatedAt":"${abuseIpdbTime(NOW)}"},"data":[]}`);
    expect(await text(empty.blacklist.answer(query({ onlyCountries: none, plaintext: true })).body)).toBe("");
  });

  test("a list longer than a chunk is a stream, a short one whole bytes", () => {
    expect(w.blacklist.answer(query()).body).toBeInstanceOf(ReadableStream);
    expect(w.blacklist.answer(query({ limit: 1 })).body).toBeInstanceOf(Uint8Array);
  });
});

describe("work per request", () => {
  test("a poll of an unchanged list does not walk the index again, whatever its filters and form", async () => {
    await text(w.blacklist.answer(query()).body);
    await text(w.blacklist.answer(query({ plaintext: true, limit: 5 })).body);
    await text(w.blacklist.answer(query({ onlyCountries: new Set(["DE"]) })).body);
    expect(w.blacklist.walks).toBe(1);
    // Another list (bound or family) is a walk of its own, kept too.
    await text(w.blacklist.answer(query({ confidenceMinimum: 90 })).body);
    await text(w.blacklist.answer(query({ confidenceMinimum: 90 })).body);
    expect(w.blacklist.walks).toBe(2);
  });

  test("a change of the index, the allowlist or the enrichment tables makes the list again", async () => {
    const list = async () => text(w.blacklist.answer(query({ limit: 10_000_000, plaintext: true })).body);
    const before = await list();
    w.index.upsert(address("12.0.0.1"), record(0, NOW));
    expect((await list()).startsWith("12.0.0.1\n")).toBe(true);
    expect(w.blacklist.walks).toBe(2);

    w.allowlist.add(cidr("12.0.0.1/32"), 9);
    w.allowlistChanged();
    expect(await list()).toBe(before);
    expect(w.blacklist.walks).toBe(3);

    w.tables = [];
    await list();
    expect(w.blacklist.walks).toBe(4);
  });

  test("countries are looked up for what is sent, once per list", async () => {
    await text(w.blacklist.answer(query({ limit: 10 })).body);
    expect(w.lookups).toBe(10);
    await text(w.blacklist.answer(query({ limit: 10 })).body);
    expect(w.lookups).toBe(10);
    // A filter that matches nothing reads every entry's country once; the next poll reads none.
    await text(w.blacklist.answer(query({ onlyCountries: new Set(["ZZ"]) })).body);
    const all = w.lookups;
    await text(w.blacklist.answer(query({ onlyCountries: new Set(["ZZ"]) })).body);
    expect(w.lookups).toBe(all);
  });

  test("a stream begun before a change goes on with the list as it was", async () => {
    const q = query({ limit: 10_000_000, plaintext: true });
    const expected = referenceBody(w.index, w.allowlist, countryOf, q, "");
    const { body } = w.blacklist.answer(q);
    const reader = (body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let got = decoder.decode((await reader.read()).value, { stream: true });
    w.index.upsert(address("12.0.0.2"), record(0, NOW));
    w.index.remove(address(expected.split("\n")[5]));
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) got += decoder.decode(chunk.value, { stream: true });
    expect(got).toBe(expected);
  });
});
