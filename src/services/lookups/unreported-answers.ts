// Answers for addresses nobody reported (no entry of their own, no listed network around them): everything in
// such an answer but the address itself and `cached` depends only on the enrichment's country and network owner,
// so the text after the address is made once per (country, owner) and each answer is that text with the address
// and the flag put in. `cached` says whether the address was asked for before and has not changed since
// (AskedAddresses). Nothing is kept per answer here (the lookups cache one when an address is asked again).

import type { Ip } from "../../domain/ip";
import type { OwnerPair } from "../enrichment/ipv4-owner-ranges";
import { AskedAddresses } from "./asked-addresses";

/** The parts of an unreported address's answer that vary: the enrichment's country code and network owner. */
export interface UnreportedGeo {
  countryCode: string | null;
  isp: string | null;
}

/**
 * The data object of an unreported address's answer as the lookups compute it: its JSON, which begins with
 * `ipAddress` and ends with `cached`, gives the tail, so a template answer and a computed one cannot differ.
 */
export type UnreportedData = (geo: UnreportedGeo) => { ipAddress: string; cached: boolean };

const DATA_HEAD = '{"ipAddress":"';
/** Tails kept at most (a few hundred bytes each); past it they are made again as asked. */
const MAX_TAILS = 50_000;

export class UnreportedAnswers {
  private readonly asked = new AskedAddresses();
  /** What comes after the address in the data object's JSON, up to and including `"cached":`, by country code
   * and then by network owner. */
  private readonly tails = new Map<string | null, Map<string | null, string>>();
  private tailCount = 0;
  /** Whether the address of the last `dataText` had been asked for before (its answer says cached). */
  askedBefore = false;
  /** The same tails by the id of the enrichment's pair, for the merged table's answers. */
  private tailsByPair: (string | undefined)[] = [];

  /**
   * `dataOf`: the data object of an unreported address with this geo, as the lookups compute it (its JSON gives the
   * tail, so both stay one shape).
   */
  constructor(private readonly dataOf: UnreportedData) {}

  /**
   * The data object's JSON of an answer for `ip` (a single lookup's body wraps it in the envelope). Counts the
   * address as asked. A `geo` with an `id` (a pair of the enrichment's merged table) finds its tail by that id:
   * an array read instead of two map lookups.
   */
  dataText(ip: Ip, geo: UnreportedGeo | OwnerPair): string {
    const cached = this.mark(ip);
    this.askedBefore = cached;
    return `${DATA_HEAD}${ip.text}${this.tailOf(geo)}${cached}}`;
  }

  /** Forgets that the address was asked for (it changed: its next answer says `cached: false`). */
  forget(ip: Ip): void {
    if (ip.version === 4) this.asked.forgetIpv4(ip.value);
    else this.asked.forgetIpv6(ip.words);
  }

  /** Forgets every asked address (a listed network changed: the tails, made of the enrichment, stay good). */
  forgetAsked(): void {
    this.asked.clear();
  }

  /** Forgets every asked address and every tail (the enrichment changed). */
  clear(): void {
    this.asked.clear();
    this.tails.clear();
    this.tailCount = 0;
    this.tailsByPair = [];
  }

  private mark(ip: Ip): boolean {
    return ip.version === 4 ? this.asked.markIpv4(ip.value) : this.asked.markIpv6(ip.words);
  }

  private tailOf(geo: UnreportedGeo | OwnerPair): string {
    if ("id" in geo && geo.id >= 0) return (this.tailsByPair[geo.id] ??= this.makeTail(geo));
    return this.tailByText(geo);
  }

  /** What comes after the address in the data object's JSON of an answer with this geo. */
  private makeTail(geo: UnreportedGeo): string {
    const json = JSON.stringify({ ...this.dataOf(geo), ipAddress: "", cached: false });
    if (!json.startsWith(DATA_HEAD) || !json.endsWith("false}")) throw new Error(`unexpected answer shape: ${json}`);
    return json.slice(DATA_HEAD.length, json.length - "false}".length);
  }

  private tailByText(geo: UnreportedGeo): string {
    let byOwner = this.tails.get(geo.countryCode);
    if (byOwner === undefined) {
      byOwner = new Map();
      this.tails.set(geo.countryCode, byOwner);
    }
    let tail = byOwner.get(geo.isp);
    if (tail === undefined) {
      tail = this.makeTail(geo);
      if (++this.tailCount > MAX_TAILS) {
        this.tails.clear();
        this.tailCount = 1;
        byOwner = new Map();
        this.tails.set(geo.countryCode, byOwner);
      }
      byOwner.set(geo.isp, tail);
    }
    return tail;
  }
}
