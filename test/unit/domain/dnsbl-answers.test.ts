// What a DNSBL answer says of a listed address (contract 17), by table: the A codes per category and risk level
// (AbuseIPDB numbers as GET /v1/categories maps them) and the TXT text, cut at 255 bytes.

import { describe, expect, test } from "bun:test";
import { ALL_CATEGORIES_MASK, maskOf } from "../../../src/domain/categories";
import { cutToBytes, listedCodes, listingText } from "../../../src/domain/dnsbl/answers";

const dotted = (codes: number[]) => codes.map((c) => [c >>> 24, (c >>> 16) & 255, (c >>> 8) & 255, c & 255].join("."));

describe("listedCodes", () => {
  const cases: [string, number, 0 | 1 | 2 | 3, string[]][] = [
    ["no category, LOW", 0, 0, ["127.0.0.2", "127.0.2.1"]],
    ["SPAM, MEDIUM", maskOf(["SPAM"]), 1, ["127.0.0.2", "127.0.1.10", "127.0.1.11", "127.0.1.12", "127.0.2.2"]],
    ["MALWARE alone has no number", maskOf(["MALWARE"]), 2, ["127.0.0.2", "127.0.2.3"]],
    ["SSH and BRUTE_FORCE, HIGH", maskOf(["SSH", "BRUTE_FORCE"]), 2, ["127.0.0.2", "127.0.1.5", "127.0.1.18", "127.0.1.22", "127.0.2.3"]],
    ["DDOS, CRITICAL", maskOf(["DDOS"]), 3, ["127.0.0.2", "127.0.1.4", "127.0.1.6", "127.0.2.4"]],
  ];
  test.each(cases)("%s", (_what, mask, risk, expected) => {
    expect(dotted(listedCodes(mask, risk))).toEqual(expected);
  });

  test("every category: all 23 AbuseIPDB numbers once, ascending, between 127.0.0.2 and the level", () => {
    const codes = dotted(listedCodes(ALL_CATEGORIES_MASK, 3));
    expect(codes).toEqual(["127.0.0.2", ...Array.from({ length: 23 }, (_, i) => `127.0.1.${i + 1}`), "127.0.2.4"]);
  });
});

describe("listingText", () => {
  test("level, score, reports with categories, and the feeds", () => {
    expect(listingText({ risk: 2, score: 22, reports: 14, categoriesMask: maskOf(["SSH", "BRUTE_FORCE"]), feeds: ["spamhaus-drop"] })).toBe(
      "abuse-intel: HIGH, score 22, 14 reports (BRUTE_FORCE, SSH), listed in feed spamhaus-drop",
    );
    expect(listingText({ risk: 3, score: 5, reports: 1, categoriesMask: 0, feeds: [] })).toBe("abuse-intel: CRITICAL, score 5, 1 report");
    expect(listingText({ risk: 1, score: 60, reports: 0, categoriesMask: maskOf(["SPAM"]), feeds: ["a", "b"] })).toBe("abuse-intel: MEDIUM, score 60, 0 reports (SPAM), listed in feeds a, b");
  });

  test("at most 255 bytes of UTF-8, cut at a character", () => {
    const text = listingText({ risk: 2, score: 1, reports: 9, categoriesMask: ALL_CATEGORIES_MASK, feeds: Array.from({ length: 30 }, (_, i) => `feed-número-${i}`) });
    expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(255);
    expect(text.startsWith("abuse-intel: HIGH, score 1, 9 reports (SPAM, ")).toBe(true);
    expect(text.endsWith("...")).toBe(true);
    expect(cutToBytes("ééé", 5)).toBe("é...");
    expect(cutToBytes("abc", 3)).toBe("abc");
  });
});
