// The merged IPv4 table of country and owner (ipv4-owner-ranges.ts) gives what Enrichment.lookup gives, on the
// built-in data: at every breakpoint of either table and next to it, and at random addresses.

import { describe, expect, test } from "bun:test";
import { ipv4FromNumber } from "../../../../src/domain/ip";
import { NO_OWNER_PAIR, openEnrichment, type Enrichment } from "../../../../src/services/enrichment/enrichment";
import { rng } from "../../../support/random";

function expectSameAnswers(enrichment: Enrichment, values: Iterable<number>): number {
  let checked = 0;
  for (const value of values) {
    const id = enrichment.ownerPairIdOfIpv4(value);
    if (id === NO_OWNER_PAIR) throw new Error("no merged table");
    const pair = enrichment.ownerPairGeo(id);
    const slow = enrichment.lookup(ipv4FromNumber(value));
    if (pair.countryCode !== slow.countryCode || pair.isp !== slow.isp) {
      throw new Error(`${ipv4FromNumber(value).text}: merged ${pair.countryCode}/${pair.isp}, lookup ${slow.countryCode}/${slow.isp}`);
    }
    checked++;
  }
  return checked;
}

describe("Ipv4OwnerRanges on the built-in enrichment", () => {
  test("the same country and owner as lookup() at 400,000 random addresses, special-purpose space included", async () => {
    const enrichment = await openEnrichment();
    const next = rng(16);
    const values = Array.from({ length: 400_000 }, () => next() >>> 0);
    values.push(0, 0x7f000001, 0xc0a80101, 0xe0000001, 0xffffffff, 0x08080808);
    expect(expectSameAnswers(enrichment, values)).toBe(values.length);
  });

  test("the same at both sides of every range boundary of both tables", async () => {
    const enrichment = await openEnrichment();
    const [{ table }] = enrichment.rangeTables();
    const edges = new Set<number>();
    for (const kind of ["country", "asn"] as const) {
      for (const start of table.v4Entries(kind).starts) {
        edges.add(start);
        if (start > 0) edges.add(start - 1);
      }
    }
    expect(edges.size).toBeGreaterThan(100_000);
    expect(expectSameAnswers(enrichment, edges)).toBe(edges.size);
  });

  test("addresses of one owner and country share a pair id; special-purpose space is the id past the table's", async () => {
    const enrichment = await openEnrichment();
    const a = enrichment.ownerPairIdOfIpv4(0x08080808);
    expect(enrichment.ownerPairIdOfIpv4(0x08080404)).toBe(a); // 8.8.4.4: the same owner and country as 8.8.8.8
    expect(a).toBeGreaterThanOrEqual(0);
    expect(enrichment.ownerPairGeo(a)).toEqual({ countryCode: "US", isp: "Google LLC" });
    const special = enrichment.ownerPairIdOfIpv4(0x7f000001);
    expect(special).toBe(enrichment.ownerPairIdOfIpv4(0xc0a80101));
    expect(special).toBeGreaterThan(a);
    expect(enrichment.ownerPairGeo(special)).toEqual({ countryCode: null, isp: null });
  });
});
