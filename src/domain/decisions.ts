// CrowdSec's decisions, as the appliance's list is sent to firewall bouncers (contract 14): each listed address or
// network is one decision with an integer id that depends only on its value (so it stays the same while the entry
// stays listed, across restarts), a Go duration, and a refresh rule that re-sends an entry before it runs out in the
// bouncer's firewall.

import { formatIpv6 } from "./ip";

/** 596 hours: ipset's longest timeout (2,147,483 s) rounded down to hours; also the default. */
export const MAX_DECISION_DURATION_SECONDS = 596 * 3600;

/** IPv4 ids: 1 + address × 64 + prefix length, below 2^39. IPv6 ids: 2^40 and up, from a hash of the value. */
const V6_ID_BASE = 2 ** 40;

export function v4DecisionId(address: number, prefixLength: number): number {
  return 1 + address * 64 + prefixLength;
}

/** The prefix length an IPv4 decision id carries. */
export const v4DecisionPrefixLength = (id: number): number => (id - 1) % 64;

/** The network address (unsigned) an IPv4 decision id carries. */
export const v4DecisionAddress = (id: number): number => (id - 1 - v4DecisionPrefixLength(id)) / 64;

export const isV6DecisionId = (id: number): boolean => id >= V6_ID_BASE;

/**
 * A decision's scope as a pull's `scopes` names it ("ip" or "range"), with no text made: an IPv4 id carries its
 * prefix length, an IPv6 one's value (from `v6Value`, by id) has a "/" when it is a range; null when that value
 * is not known.
 */
export function decisionScope(id: number, v6Value: (id: number) => string | undefined): "ip" | "range" | null {
  if (!isV6DecisionId(id)) return v4DecisionPrefixLength(id) === 32 ? "ip" : "range";
  const value = v6Value(id);
  return value === undefined ? null : value.includes("/") ? "range" : "ip";
}

/** An IPv6 decision's id: 2^40 + a 52-bit FNV-1a hash of its words and prefix (below 2^53, an exact JSON integer). */
export function v6DecisionId(words: ArrayLike<number>, prefixLength: number): number {
  // 64-bit FNV-1a over the 17 bytes, in two 32-bit halves (BigInt would cost a thousand times more per entry).
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  const mix = (byte: number) => {
    lo ^= byte;
    // multiply (hi, lo) by the FNV prime 0x100000001b3 = 2^40 + 0x1b3, modulo 2^64
    const loTimes = lo * 0x1b3;
    const carry = Math.floor(loTimes / 2 ** 32);
    const newLo = loTimes >>> 0;
    hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = newLo;
  };
  for (let i = 0; i < 4; i++) {
    const w = words[i];
    mix(w >>> 24);
    mix((w >>> 16) & 0xff);
    mix((w >>> 8) & 0xff);
    mix(w & 0xff);
  }
  mix(prefixLength);
  return V6_ID_BASE + (hi & 0xfffff) * 2 ** 32 + lo;
}

export function v6DecisionValue(words: ArrayLike<number>, prefixLength: number): { value: string; scope: "Ip" | "Range" } {
  const text = formatIpv6(words);
  return prefixLength === 128 ? { value: text, scope: "Ip" } : { value: `${text}/${prefixLength}`, scope: "Range" };
}

/** A Go duration in whole seconds, as CrowdSec writes them: `595h59m59s`, `1m0s`, `0s`. */
export function goDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (h > 0) return `${h}h${m}m${rest}s`;
  if (m > 0) return `${m}m${rest}s`;
  return `${rest}s`;
}

/** Reads `596h`, `90m`, `3600s`, `1h30m` (Go's units h, m, s); null when it is not one. */
export function parseGoDuration(text: string): number | null {
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim());
  if (match === null || text.trim() === "") return null;
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
}

/**
 * Whether an entry sent at `sentAtSeconds` with `durationSeconds` must be sent again now (in `deleted` and `new` of
 * one response), so that it never runs out in the firewall while it stays listed: once less than a tenth of the
 * duration is left, and at least an hour before the end when the duration allows (half of it for short ones).
 */
export function needsRefresh(sentAtSeconds: number, durationSeconds: number, nowSeconds: number): boolean {
  const margin = Math.min(durationSeconds / 2, Math.max(durationSeconds / 10, 3600));
  return nowSeconds >= sentAtSeconds + durationSeconds - margin;
}
