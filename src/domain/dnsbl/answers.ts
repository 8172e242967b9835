// What a DNSBL answer says of a listed address (contract 17): the A record codes (127.0.0.2 listed, 127.0.1.N per
// AbuseIPDB category number, 127.0.2.L per risk level) and the TXT text. Pure: the listener turns these into
// bytes once per distinct combination.

import { abuseIpdbNumbersMappedTo, CATEGORIES, categoriesFromMask } from "../categories";
import { RISK_LEVELS, type RiskCode } from "../risk";

/** RFC 5782's generic "listed" code. */
export const LISTED_CODE = 0x7f000002;
/**
 * The test point (RFC 5782 5) always listed: 127.0.0.2, also asked as IPv6 `::ffff:7f00:2`. Its partner 127.0.0.1
 * is never listed, as no loopback address can be reported (contract 2).
 */
export const TEST_POINT_LISTED_V4 = 0x7f000002;
export const TEST_POINT_TEXT = "abuse-intel: TEST, the RFC 5782 test point, always listed";
/** The longest character-string a TXT record holds. */
export const MAX_TXT_BYTES = 255;

/** The AbuseIPDB numbers of each category bit, ascending (SPAM's bit gives 10, 11, 12; MALWARE none). */
const NUMBERS_BY_BIT: readonly (readonly number[])[] = CATEGORIES.map((c) => abuseIpdbNumbersMappedTo(c));

/**
 * The A records of a listed address, as 32-bit values in the order they are sent: 127.0.0.2, then 127.0.1.N for
 * each AbuseIPDB number N of its categories (ascending, once each), then 127.0.2.L for its risk level (1 LOW ..
 * 4 CRITICAL).
 */
export function listedCodes(categoriesMask: number, risk: RiskCode): number[] {
  const numbers: number[] = [];
  for (let bit = 0; bit < NUMBERS_BY_BIT.length; bit++) if ((categoriesMask & (1 << bit)) !== 0) numbers.push(...NUMBERS_BY_BIT[bit]);
  numbers.sort((a, b) => a - b);
  const codes = [LISTED_CODE];
  for (let i = 0; i < numbers.length; i++) if (i === 0 || numbers[i] !== numbers[i - 1]) codes.push(0x7f000100 + numbers[i]);
  codes.push(0x7f000200 + risk + 1);
  return codes;
}

/** What the TXT record of a listed address tells. */
export interface ListingFacts {
  risk: RiskCode;
  score: number;
  reports: number;
  categoriesMask: number;
  /** Names of the feeds that list the address or a network around it, distinct. */
  feeds: readonly string[];
}

/**
 * `abuse-intel: HIGH, score 22, 14 reports (SSH, BRUTE_FORCE), listed in feed spamhaus-drop`: at most 255 bytes
 * of UTF-8 (cut at a character, with "..." when something was left out).
 */
export function listingText(facts: ListingFacts): string {
  const categories = categoriesFromMask(facts.categoriesMask);
  let text = `abuse-intel: ${RISK_LEVELS[facts.risk]}, score ${facts.score}, ${facts.reports} report${facts.reports === 1 ? "" : "s"}`;
  if (categories.length > 0) text += ` (${categories.join(", ")})`;
  if (facts.feeds.length > 0) text += `, listed in feed${facts.feeds.length === 1 ? "" : "s"} ${facts.feeds.join(", ")}`;
  return cutToBytes(text, MAX_TXT_BYTES);
}

/** `text` when its UTF-8 fits `limit` bytes, else its longest prefix of whole characters that fits with "...". */
export function cutToBytes(text: string, limit: number): string {
  const encoder = new TextEncoder();
  if (encoder.encode(text).length <= limit) return text;
  let cut = "";
  let bytes = 3;
  for (const char of text) {
    const size = encoder.encode(char).length;
    if (bytes + size > limit) break;
    cut += char;
    bytes += size;
  }
  return `${cut}...`;
}
