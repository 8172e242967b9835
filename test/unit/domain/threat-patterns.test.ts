import { describe, expect, test } from "bun:test";
import type { Category } from "../../../src/domain/categories";
import { compareIp, parseIp } from "../../../src/domain/ip";
import {
  campaignCidr,
  coveringCidr,
  DEFAULT_THREAT_THRESHOLDS,
  detectPatterns,
  resolveThreatThresholds,
  type ThreatObservation,
} from "../../../src/domain/threat-patterns";

const T0 = Date.parse("2026-11-21T08:00:00.000Z");
const MIN = 60_000;

function obs(ip: string, minutes: number, category: Category = "BRUTE_FORCE", asn: number | null = 64500): ThreatObservation {
  return { ip: parseIp(ip), category, atMs: T0 + minutes * MIN, asn };
}

/** `n` addresses of 203.0.113.0/24 (.1, .2, …), one every `step` minutes. */
const burst = (n: number, step = 1, category: Category = "BRUTE_FORCE") =>
  Array.from({ length: n }, (_, i) => obs(`203.0.113.${i + 1}`, i * step, category, null));

/** `n` addresses of one ASN spread over /24s with at most 4 each, so no subnet burst hides the campaign. */
const campaign = (n: number, category: Category = "SSH", asn: number | null = 64500, step = 1) =>
  Array.from({ length: n }, (_, i) => obs(`198.${18 + (i >> 2)}.${i % 4}.9`, i * step, category, asn));

describe("subnet_burst", () => {
  test("5 distinct addresses of one /24 within 60 minutes are a burst, named by the network", () => {
    expect(detectPatterns(burst(5)) as unknown[]).toEqual([
      {
        kind: "subnet_burst",
        patternKey: "203.0.113.0/24",
        cidr: "203.0.113.0/24",
        asn: null,
        category: "BRUTE_FORCE",
        addresses: ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4", "203.0.113.5"],
        windowStartMs: T0,
        windowEndMs: T0 + 4 * MIN,
      },
    ]);
  });

  test.each([
    ["4 addresses: none", burst(4), 0],
    ["5 addresses over exactly 60 minutes (both ends count): one", burst(5, 15), 1],
    ["5 addresses over 60 minutes and 1 ms: none", [...burst(4, 15), { ...obs("203.0.113.5", 60), atMs: T0 + 60 * MIN + 1 }], 0],
    ["one address reported 5 times: none", Array.from({ length: 5 }, (_, i) => obs("203.0.113.1", i)), 0],
    ["5 addresses split 3 + 2 over two /24s: none", [...burst(3), obs("203.0.114.1", 1), obs("203.0.114.2", 2)], 0],
    ["5 addresses, duplicates of them included: one", [...burst(5), ...burst(5)], 1],
  ])("%s", (_, reports, count) => {
    expect(detectPatterns(reports).filter((p) => p.kind === "subnet_burst")).toHaveLength(count);
  });

  test("IPv6 groups by /64", () => {
    const same64 = Array.from({ length: 5 }, (_, i) => obs(`2001:db8:1:2::${i + 1}`, i, "PORT_SCAN", null));
    const [p] = detectPatterns(same64);
    expect(p).toMatchObject({ kind: "subnet_burst", cidr: "2001:db8:1:2::/64", category: "PORT_SCAN", addresses: ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::3", "2001:db8:1:2::4", "2001:db8:1:2::5"] });
    const spread = Array.from({ length: 5 }, (_, i) => obs(`2001:db8:1:${i}::1`, i, "PORT_SCAN", null));
    expect(detectPatterns(spread)).toEqual([]);
  });

  test("mixed categories give a null category; one ASN for all gives the ASN", () => {
    const mixed = burst(5).map((o, i) => ({ ...o, category: (i % 2 ? "SSH" : "SPAM") as Category, asn: 64501 }));
    expect(detectPatterns(mixed)[0]).toMatchObject({ category: null, asn: 64501 });
  });

  test("the span with the most distinct addresses is the one reported", () => {
    // 5 within the first hour, then 7 more within a later hour: the later span holds 7.
    const reports = [...burst(5, 1), ...Array.from({ length: 7 }, (_, i) => obs(`203.0.113.${100 + i}`, 200 + i, "BRUTE_FORCE", null))];
    const [p] = detectPatterns(reports);
    expect(p.addresses).toHaveLength(7);
    expect(p.windowStartMs).toBe(T0 + 200 * MIN);
  });
});

describe("category_campaign", () => {
  test("one category against 20 distinct addresses of one ASN within 60 minutes", () => {
    const [p, ...rest] = detectPatterns(campaign(20, "SSH", 64500, 3));
    expect(rest).toEqual([]);
    expect(p).toMatchObject({
      kind: "category_campaign",
      patternKey: "AS64500:SSH",
      asn: 64500,
      category: "SSH",
      cidr: "198.18.0.0/16", // covering 198.18.0.9 .. 198.22.3.9 would be a /13: the /16 with the most (the lowest of equals)
      windowStartMs: T0,
      windowEndMs: T0 + 57 * MIN,
    });
    expect(p.addresses).toHaveLength(20);
  });

  test.each([
    ["19 addresses", campaign(19)],
    ["20 addresses over 76 minutes", campaign(20, "SSH", 64500, 4)],
    ["20 addresses, two categories of 10", [...campaign(10, "SSH"), ...campaign(20, "SPAM").slice(10)]],
    ["20 addresses of unknown ASN", campaign(20, "SSH", null)],
    ["20 addresses of two ASNs", [...campaign(10, "SSH", 64500), ...campaign(20, "SSH", 64501).slice(10)]],
  ])("%s: no campaign", (_, reports) => {
    expect(detectPatterns(reports).filter((p) => p.kind === "category_campaign")).toHaveLength(0);
  });

  test("a campaign inside one /24 is also a subnet burst: both are reported, bursts first", () => {
    const reports = Array.from({ length: 20 }, (_, i) => obs(`8.8.8.${i + 1}`, i, "SSH", 15169));
    expect(detectPatterns(reports).map((p) => [p.kind, p.patternKey, p.cidr])).toEqual([
      ["subnet_burst", "8.8.8.0/24", "8.8.8.0/24"],
      ["category_campaign", "AS15169:SSH", "8.8.8.0/27"],
    ]);
  });
});

describe("thresholds", () => {
  test("are configurable", () => {
    expect(detectPatterns(burst(3), { ...DEFAULT_THREAT_THRESHOLDS, subnetMinAddresses: 3 })).toHaveLength(1);
    const wide = [obs("203.0.1.1", 0), obs("203.0.2.1", 1), obs("203.0.3.1", 2), obs("203.0.4.1", 3), obs("203.0.5.1", 4)].map((o) => ({ ...o, asn: null }));
    expect(detectPatterns(wide)).toEqual([]);
    expect(detectPatterns(wide, { ...DEFAULT_THREAT_THRESHOLDS, ipv4SubnetPrefix: 16 })[0].cidr).toBe("203.0.0.0/16");
    expect(detectPatterns(burst(5, 15), { ...DEFAULT_THREAT_THRESHOLDS, windowMs: 30 * MIN })).toEqual([]);
    expect(detectPatterns(campaign(10), { ...DEFAULT_THREAT_THRESHOLDS, campaignMinAddresses: 10 })).toHaveLength(1);
  });

  test("the defaults are the contract's", () => {
    expect(resolveThreatThresholds()).toEqual({
      windowMs: 3_600_000,
      subnetMinAddresses: 5,
      ipv4SubnetPrefix: 24,
      ipv6SubnetPrefix: 64,
      campaignMinAddresses: 20,
      repeatAfterMs: 86_400_000,
    });
  });

  test("bad values are refused, each named", () => {
    try {
      resolveThreatThresholds({ subnetMinAddresses: 0, ipv4SubnetPrefix: 33, windowMs: 1.5 });
      throw new Error("accepted");
    } catch (error) {
      expect((error as { details?: { field: string }[] }).details?.map((d) => d.field)).toEqual(["windowMs", "subnetMinAddresses", "ipv4SubnetPrefix"]);
    }
  });
});

describe("campaignCidr: never wider than a /16 or /32", () => {
  test.each([
    [["8.8.8.1", "8.8.8.20"], "8.8.8.0/27"],
    [["8.8.8.8", "8.8.4.4"], "8.8.0.0/20"],
    [["8.8.8.8", "8.8.4.4", "216.58.192.1"], "8.8.0.0/16"],
    [["8.8.8.8", "216.58.192.1"], "8.8.0.0/16"],
    [["216.58.192.1", "8.8.8.8", "216.58.1.1"], "216.58.0.0/16"],
    [["2001:db8::1", "2001:db9::1", "2001:db9::2"], "2001:db9::/32"],
  ])("%j → %s", (addresses, cidr) => {
    expect(campaignCidr(addresses.map(parseIp).sort(compareIp))).toBe(cidr);
  });
});

describe("coveringCidr", () => {
  test.each([
    [["1.2.3.4"], "1.2.3.4/32"],
    [["8.8.8.1", "8.8.8.20"], "8.8.8.0/27"],
    [["8.8.8.8", "8.8.4.4"], "8.8.0.0/20"],
    [["8.8.8.8", "216.58.192.1"], "0.0.0.0/0"],
    [["2001:db8::1", "2001:db8::ff"], "2001:db8::/120"],
    [["2001:db8::1", "2001:db8::2", "9.9.9.9"], "2001:db8::/126"],
  ])("%j → %s", (addresses, cidr) => {
    expect(coveringCidr(addresses.map(parseIp))).toBe(cidr);
  });
});
