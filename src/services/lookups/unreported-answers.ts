// Answers for addresses nobody reported (no entry of their own, no listed network around them): everything in
// such an answer but the address itself and `cached` depends only on the enrichment's country and network owner,
// so the bytes after the address are made once per (country, owner) and each answer is written as bytes: the
// head, the address, that tail and the flag. `cached` says whether the address was asked for before and has not
// changed since (AskedAddresses). Nothing is kept per answer here (the lookups cache one when an address is
// asked again).
//
// Why bytes and not strings: a busy server meets tens of thousands of (country, owner) pairs over its life, and a
// string or object kept for each was old-generation garbage collected again and again (its full collections took
// a never-reported lookup's p99 from 4-5 ms to 7-8 ms); an answer made as a string was more garbage per request.

import type { Ip } from "../../domain/ip";
import { AskedAddresses } from "./asked-addresses";
import { grownTo } from "../../domain/typed-arrays";
import type { OwnerGeo } from "../enrichment/ipv4-owner-ranges";
import { ByteScratch } from "./byte-scratch";

/** The parts of an unreported address's answer that vary: the enrichment's country code and network owner. */
export type UnreportedGeo = OwnerGeo;

/**
 * The data object of an unreported address's answer as the lookups compute it: its JSON, which begins with
 * `ipAddress` and ends with `cached`, gives the tail, so a template answer and a computed one cannot differ.
 */
export type UnreportedData = (geo: UnreportedGeo) => { ipAddress: string; cached: boolean };

const DATA_HEAD = '{"ipAddress":"';
const CACHED_TRUE = Buffer.from("true}");
const CACHED_FALSE = Buffer.from("false}");
/** Tails kept by country and owner text at most (a few hundred bytes each); past it they are made again. */
const MAX_TEXT_TAILS = 50_000;
const utf8 = new TextEncoder();

export class UnreportedAnswers {
  private readonly asked = new AskedAddresses();
  /** Tails by the id of the enrichment's pair (country, owner), made when first needed. */
  private pairTails = new PairTails();
  /** Tails by country code and then by network owner, for addresses the merged table does not answer. */
  private readonly textTails = new Map<string | null, Map<string | null, Uint8Array>>();
  private textTailCount = 0;

  /**
   * `dataOf`: the data object of an unreported address with this geo, as the lookups compute it (its JSON gives the
   * tail, so both stay one shape). `geoOfPair`: the country and owner of a pair id of the enrichment.
   */
  constructor(
    private readonly dataOf: UnreportedData,
    private readonly geoOfPair: (id: number) => UnreportedGeo = () => {
      throw new Error("no pairs of country and owner");
    },
  ) {}

  /**
   * Writes the data object's JSON of the answer for `ip` (a single lookup's body wraps it in the envelope) into
   * `out` as UTF-8, and counts the address as asked. `geo` is the enrichment's pair id, or the country and owner.
   * Returns whether the address had been asked before (then the answer says `cached: true`).
   */
  write(ip: Ip, geo: UnreportedGeo | number, out: ByteScratch): boolean {
    const cached = ip.version === 4 ? this.asked.markIpv4(ip.value) : this.asked.markIpv6(ip.words);
    out.putAscii(DATA_HEAD);
    out.putAscii(ip.text);
    if (typeof geo === "number") this.pairTails.write(geo, out, this.makePairTail);
    else out.putBytes(this.tailByText(geo));
    out.putBytes(cached ? CACHED_TRUE : CACHED_FALSE);
    return cached;
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
    this.pairTails = new PairTails();
    this.textTails.clear();
    this.textTailCount = 0;
  }

  private readonly makePairTail = (id: number): Uint8Array => this.makeTail(this.geoOfPair(id));

  /** What comes after the address in the data object's JSON of an answer with this geo, up to `"cached":`. */
  private makeTail(geo: UnreportedGeo): Uint8Array {
    const json = JSON.stringify({ ...this.dataOf(geo), ipAddress: "", cached: false });
    if (!json.startsWith(DATA_HEAD) || !json.endsWith("false}")) throw new Error(`unexpected answer shape: ${json}`);
    return utf8.encode(json.slice(DATA_HEAD.length, json.length - "false}".length));
  }

  private tailByText(geo: UnreportedGeo): Uint8Array {
    let byOwner = this.textTails.get(geo.countryCode);
    if (byOwner === undefined) {
      byOwner = new Map();
      this.textTails.set(geo.countryCode, byOwner);
    }
    let tail = byOwner.get(geo.isp);
    if (tail === undefined) {
      tail = this.makeTail(geo);
      if (++this.textTailCount > MAX_TEXT_TAILS) {
        this.textTails.clear();
        this.textTailCount = 1;
        byOwner = new Map();
        this.textTails.set(geo.countryCode, byOwner);
      }
      byOwner.set(geo.isp, tail);
    }
    return tail;
  }
}

/** Tails by dense pair id, as bytes in one arena: nothing per pair for the collector. */
class PairTails {
  /** The tails one after another; `at` is where the next one goes. */
  private readonly arena = new ByteScratch();
  /** Per pair id: where its tail ends in the arena and where it starts plus one (0: not made yet). */
  private startsPlusOne = new Uint32Array(1024);
  private ends = new Uint32Array(1024);

  write(id: number, out: ByteScratch, make: (id: number) => Uint8Array): void {
    if (id >= this.startsPlusOne.length) {
      const size = Math.max(2 * this.startsPlusOne.length, id + 1);
      this.startsPlusOne = grownTo(this.startsPlusOne, size);
      this.ends = grownTo(this.ends, size);
    }
    if (this.startsPlusOne[id] === 0) {
      this.startsPlusOne[id] = this.arena.at + 1;
      this.arena.putBytes(make(id));
      this.ends[id] = this.arena.at;
    }
    out.putSlice(this.arena.buffer, this.startsPlusOne[id] - 1, this.ends[id]);
  }
}
