// The DNSBL zone's answers (contract 17): one query's bytes in, the answer's bytes out, written into a buffer
// reused for every query. Whether an address is listed is the blocklist's own test (services/blocklists/
// membership.ts) on the same index the HTTP lookups read. A listed address's A records are bytes prepared once per
// (categories, risk) combination and appended after the question, with compression pointers to the question's
// name; the SOA is prepared once per serial, which grows with the index's generation and the allowlist.

import { blocklistFilters, type BlocklistFilters } from "../domain/blocklist/query";
import type { Clock } from "../domain/clock";
import { LISTED_CODE, listedCodes, listingText, TEST_POINT_LISTED_V4, TEST_POINT_TEXT } from "../domain/dnsbl/answers";
import { classifyName, NameKind, wireName } from "../domain/dnsbl/names";
import { ipFromWords, ipv4FromNumber, type Ip } from "../domain/ip";
import type { RiskCode, RiskLevel } from "../domain/risk";
import type { ReputationIndex } from "../index/reputation-index";
import type { Allowlist } from "../services/allowlist/allowlist";
import { listingOfV4, listingOfV6, listingScratch } from "../services/blocklists/membership";
import type { NetworkView } from "../services/feeds/listed-networks";
import {
  answerFlags,
  CLASSIC_UDP_PAYLOAD,
  EDNS_PAYLOAD,
  HEADER_BYTES,
  ipv4Rdata,
  put16,
  put32,
  putHeader,
  putOpt,
  QType,
  QueryReader,
  Rcode,
  ReadOutcome,
  recordBytes,
  TC_FLAG,
  txtRdata,
} from "./wire";

/** What the zone answers from: one instance's index and allowlist (swapped whole on an edge). */
export interface DnsblSource {
  index: ReputationIndex;
  allowlist: Allowlist;
  /** Rescores addresses whose reports passed retention (contract 5.5: at once), as lists do before a walk. */
  expireDue(): void;
  /** The feeds' listings around an address, for the TXT text. */
  networksAround(ip: Ip): NetworkView[];
}

export interface ZoneSettings {
  zone: string;
  ttl: number;
  riskLevel: RiskLevel;
  /** The IPv4 address `ns.ZONE` answers (the listen address when it is a specific IPv4 one), or null. */
  nameServerV4: number | null;
}

/** The question's name is written right after the header: answers point to it. */
const QUESTION_POINTER = HEADER_BYTES;
/** TXT answers kept per serial at most. */
const TXT_CACHE_LIMIT = 65_536;
/** The largest message: a TCP answer's length prefix is 16 bits. */
const MAX_MESSAGE = 65_535;

/** Prepared A records of one (categories, risk) combination. */
interface RecordBlock {
  bytes: Uint8Array;
  count: number;
}

export class DnsblResponder {
  /** The answer is written at offset 2, so that TCP can put its length prefix in front without a copy. */
  readonly buffer = new Uint8Array(MAX_MESSAGE + 2);
  private readonly message = this.buffer.subarray(2);
  readonly reader = new QueryReader();
  /** The last answer's rcode and whether it said "listed" (for metrics and the access log). */
  rcode = 0;
  listed = false;

  private source: DnsblSource | null = null;
  private readonly zone: Uint8Array;
  private readonly filters: BlocklistFilters;
  private readonly words = new Uint32Array(4);
  private readonly listing = listingScratch();
  private readonly blocks = new Map<number, RecordBlock>();
  private readonly testPointBlock: RecordBlock;
  private readonly testPointTxt: Uint8Array;
  private readonly nsRecord: Uint8Array;
  private readonly nsAddressRecord: Uint8Array | null;
  private txtCache = new Map<number | string, Uint8Array>();
  /** The SOA record after its owner name (type .. rdata), for the current serial. */
  private soaTail: Uint8Array = new Uint8Array(0);
  private serial: number;
  private seenGeneration = -1;
  private seenAllowlistChanges = -1;
  private allowlistChanges = 0;

  constructor(
    private readonly settings: ZoneSettings,
    private readonly clock: Clock,
  ) {
    this.zone = wireName(settings.zone);
    this.filters = blocklistFilters({ minimumRisk: settings.riskLevel });
    const ttl = settings.ttl;
    this.testPointBlock = { bytes: recordBytes(QUESTION_POINTER, QType.A, ttl, ipv4Rdata(LISTED_CODE)), count: 1 };
    this.testPointTxt = recordBytes(QUESTION_POINTER, QType.TXT, ttl, txtRdata(TEST_POINT_TEXT));
    // ns.ZONE: the label "ns" and a pointer to the zone, which is the question's name at the apex.
    this.nsRecord = recordBytes(QUESTION_POINTER, QType.NS, ttl, Uint8Array.of(2, 0x6e, 0x73, 0xc0, QUESTION_POINTER));
    this.nsAddressRecord = settings.nameServerV4 === null ? null : recordBytes(QUESTION_POINTER, QType.A, ttl, ipv4Rdata(settings.nameServerV4));
    this.serial = Math.floor(clock.now() / 1000) >>> 0;
    this.prepareSoa();
  }

  /** Answers from `source` from now on; null answers SERVFAIL (an edge before its first snapshot). */
  setSource(source: DnsblSource | null): void {
    this.source = source;
    this.seenGeneration = -1;
    if (source !== null) source.allowlist.onChange(() => this.source === source && this.allowlistChanges++);
  }

  /**
   * The answer to `packet[0..length)` in `message` (this.buffer from offset 2): its length, or -1 when nothing is
   * to be sent. A UDP answer is cut to 512 bytes, or the requester's EDNS size up to 1232; `refused`: the source
   * is not allowed to ask (--dns-allow).
   */
  respond(packet: Uint8Array, length: number, udp: boolean, refused = false): number {
    const q = this.reader;
    const out = this.message;
    this.listed = false;
    const outcome = q.read(packet, length);
    if (outcome === ReadOutcome.Drop) return -1;
    if (outcome === ReadOutcome.FormErr || outcome === ReadOutcome.NotImp) {
      this.rcode = outcome === ReadOutcome.FormErr ? Rcode.FormErr : Rcode.NotImp;
      return putHeader(out, q.id, answerFlags(q.flags, false, this.rcode), 0, 0, 0, 0);
    }
    let at = this.putQuestion();
    if (outcome === ReadOutcome.BadVersion) {
      this.rcode = 16;
      putHeader(out, q.id, answerFlags(q.flags, false, 0), 1, 0, 0, 1);
      return putOpt(out, at, 1);
    }
    const edns = q.ednsPayload > 0;
    const source = this.source;
    if (refused || source === null) return this.bare(at, refused ? Rcode.Refused : Rcode.ServFail, edns);
    const kind = classifyName(q.lowerName, q.nameLength, this.zone, this.words);
    if (kind === NameKind.Outside || !q.classIn) return this.bare(at, Rcode.Refused, edns);
    // Retention first (a change it makes moves the serial of this very answer), then the serial.
    source.expireDue();
    this.followSource(source);
    const qtype = q.qtype;
    const wantsA = qtype === QType.A || qtype === QType.ANY;
    let answers = 0;
    let exists = true;
    switch (kind) {
      case NameKind.Apex:
        if (qtype === QType.SOA || qtype === QType.ANY) {
          at = this.putSoa(at, QUESTION_POINTER);
          answers++;
        }
        if (qtype === QType.NS || qtype === QType.ANY) {
          out.set(this.nsRecord, at);
          at += this.nsRecord.length;
          answers++;
        }
        break;
      case NameKind.NameServer:
        if (wantsA && this.nsAddressRecord !== null) {
          out.set(this.nsAddressRecord, at);
          at += this.nsAddressRecord.length;
          answers++;
        }
        break;
      case NameKind.Ipv4:
      case NameKind.Ipv6: {
        const words = this.words;
        // An IPv4-mapped IPv6 address is the IPv4 address (contract 2), as the index keeps it.
        const v4 = kind === NameKind.Ipv4 || (words[0] === 0 && words[1] === 0 && words[2] === 0xffff);
        if (kind === NameKind.Ipv6 && v4) words[0] = words[3];
        if (v4 && words[0] === TEST_POINT_LISTED_V4) {
          const record = wantsA ? this.testPointBlock.bytes : qtype === QType.TXT ? this.testPointTxt : null;
          if (record !== null) {
            out.set(record, at);
            at += record.length;
            answers++;
          }
          break;
        }
        const listed = v4
          ? listingOfV4(source.index, source.allowlist.set, this.filters, words[0], this.listing)
          : listingOfV6(source.index, source.allowlist.set, this.filters, words, this.listing);
        if (!listed) {
          exists = false;
          break;
        }
        this.listed = true;
        if (wantsA) {
          const block = this.blockOf(this.listing.categories, this.listing.risk);
          out.set(block.bytes, at);
          at += block.bytes.length;
          answers += block.count;
        } else if (qtype === QType.TXT) {
          const record = this.txtOf(source, v4);
          out.set(record, at);
          at += record.length;
          answers++;
        }
        break;
      }
      default:
        exists = false;
    }
    const zoneAt = QUESTION_POINTER + q.nameLength - this.zone.length;
    const authority = answers === 0 ? 1 : 0;
    if (authority === 1) at = this.putSoa(at, zoneAt);
    this.rcode = exists ? Rcode.NoError : Rcode.NxDomain;
    if (edns) at = putOpt(out, at);
    const room = !udp ? MAX_MESSAGE : edns ? Math.min(q.ednsPayload, EDNS_PAYLOAD) : CLASSIC_UDP_PAYLOAD;
    if (at > room) {
      // Too big for this UDP answer: the question alone with TC set; the client asks again over TCP.
      at = HEADER_BYTES + q.nameLength + 4;
      putHeader(out, q.id, answerFlags(q.flags, true, this.rcode) | TC_FLAG, 1, 0, 0, edns ? 1 : 0);
      return edns ? putOpt(out, at) : at;
    }
    putHeader(out, q.id, answerFlags(q.flags, true, this.rcode), 1, answers, authority, edns ? 1 : 0);
    return at;
  }

  /** Writes the question as asked after the header; returns the offset after it. */
  private putQuestion(): number {
    const q = this.reader;
    const out = this.message;
    // A loop rather than set(subarray): no view made per query for a few dozen bytes.
    const name = q.name;
    const n = q.nameLength;
    for (let i = 0; i < n; i++) out[HEADER_BYTES + i] = name[i];
    let at = HEADER_BYTES + n;
    at = put16(out, at, q.qtype);
    return put16(out, at, q.qclass);
  }

  /** An answer with the question and no records: REFUSED, SERVFAIL. */
  private bare(at: number, rcode: number, edns: boolean): number {
    this.rcode = rcode;
    putHeader(this.message, this.reader.id, answerFlags(this.reader.flags, false, rcode), 1, 0, 0, edns ? 1 : 0);
    return edns ? putOpt(this.message, at) : at;
  }

  private putSoa(at: number, owner: number): number {
    put16(this.message, at, 0xc000 | owner);
    this.message.set(this.soaTail, at + 2);
    return at + 2 + this.soaTail.length;
  }

  /** A new serial when what the source lists may have changed since the last query (index generation, allowlist). */
  private followSource(source: DnsblSource): void {
    const generation = source.index.generation;
    if (generation === this.seenGeneration && this.allowlistChanges === this.seenAllowlistChanges) return;
    const first = this.seenGeneration === -1 && this.seenAllowlistChanges === -1;
    this.seenGeneration = generation;
    this.seenAllowlistChanges = this.allowlistChanges;
    if (first) return;
    this.serial = Math.max(this.serial + 1, Math.floor(this.clock.now() / 1000)) >>> 0;
    this.txtCache = new Map();
    this.prepareSoa();
  }

  private prepareSoa(): void {
    const { ttl } = this.settings;
    const zone = this.zone;
    const mname = concat(Uint8Array.of(2, 0x6e, 0x73), zone); // ns.ZONE
    const rname = concat(Uint8Array.of(10, ...new TextEncoder().encode("hostmaster")), zone);
    const rdata = new Uint8Array(mname.length + rname.length + 20);
    rdata.set(mname, 0);
    rdata.set(rname, mname.length);
    let at = mname.length + rname.length;
    at = put32(rdata, at, this.serial);
    at = put32(rdata, at, 3600); // refresh
    at = put32(rdata, at, 600); // retry
    at = put32(rdata, at, 86_400); // expire
    put32(rdata, at, ttl); // minimum: the negative-caching TTL
    // recordBytes makes the owner a pointer; the tail is what follows it.
    this.soaTail = recordBytes(0, QType.SOA, ttl, rdata).subarray(2);
  }

  private blockOf(categories: number, risk: RiskCode): RecordBlock {
    const key = categories * 4 + risk;
    let block = this.blocks.get(key);
    if (block === undefined) {
      const codes = listedCodes(categories, risk);
      block = { bytes: concat(...codes.map((code) => recordBytes(QUESTION_POINTER, QType.A, this.settings.ttl, ipv4Rdata(code)))), count: codes.length };
      this.blocks.set(key, block);
    }
    return block;
  }

  private txtOf(source: DnsblSource, v4: boolean): Uint8Array {
    const words = this.words;
    const key = v4 ? words[0] : `${words[0]}.${words[1]}.${words[2]}.${words[3]}`;
    let record = this.txtCache.get(key);
    if (record === undefined) {
      const { index } = source;
      const { slot, risk, categories } = this.listing;
      const ip = v4 ? ipv4FromNumber(words[0]) : ipFromWords(words);
      const feeds = [...new Set(source.networksAround(ip).map((n) => n.source))];
      const text = listingText({ risk, score: index.score[slot], reports: index.total[slot], categoriesMask: categories, feeds });
      record = recordBytes(QUESTION_POINTER, QType.TXT, this.settings.ttl, txtRdata(text));
      if (this.txtCache.size >= TXT_CACHE_LIMIT) this.txtCache.clear();
      this.txtCache.set(key, record);
    }
    return record;
  }
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
