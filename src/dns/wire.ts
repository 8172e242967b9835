// The DNS message format (RFC 1035, EDNS0 of RFC 6891) as far as a DNSBL needs it: reading one query's header,
// question and OPT record without allocating, and writing headers and records into a reused buffer. Hostile
// input costs at most one pass over the packet: compression pointers must point backwards, a name is at most 255
// bytes and 128 hops, and every length is checked against the packet's end. Tested against dns-packet and dig.

export const Rcode = { NoError: 0, FormErr: 1, ServFail: 2, NxDomain: 3, NotImp: 4, Refused: 5 } as const;
export const QType = { A: 1, NS: 2, SOA: 6, TXT: 16, AAAA: 28, OPT: 41, ANY: 255 } as const;
export const CLASS_IN = 1;
const CLASS_ANY = 255;

export const HEADER_BYTES = 12;
/** The UDP payload size we announce in our OPT record (the DNS flag day 2020 value). */
export const EDNS_PAYLOAD = 1232;
/** A UDP answer's room without EDNS. */
export const CLASSIC_UDP_PAYLOAD = 512;
const MAX_NAME_BYTES = 255;
const MAX_POINTER_HOPS = 128;

/** What reading a packet found. */
export const ReadOutcome = {
  /** One well-formed question: answer it. */
  Query: 0,
  /** Not a query we may answer (too short for a header, or a response): say nothing. */
  Drop: 1,
  /** A header but not one well-formed question: FORMERR. */
  FormErr: 2,
  /** An opcode other than QUERY: NOTIMP. */
  NotImp: 3,
  /** EDNS of a version other than 0: BADVERS (RFC 6891 6.1.3). */
  BadVersion: 4,
} as const;
export type ReadOutcome = (typeof ReadOutcome)[keyof typeof ReadOutcome];

/** One query as read from a packet; a reader is reused for every packet (no allocation per query). */
export class QueryReader {
  id = 0;
  /** The header's second 16 bits as sent. */
  flags = 0;
  qtype = 0;
  qclass = 0;
  /** The question's name in wire form, uncompressed, as asked (case kept): what the answer repeats. */
  readonly name = new Uint8Array(MAX_NAME_BYTES + 1);
  /** The same name with ASCII letters lowercased: what is compared. */
  readonly lowerName = new Uint8Array(MAX_NAME_BYTES + 1);
  nameLength = 0;
  /** The requester's UDP payload size from its OPT record; 0 when the query had none. */
  ednsPayload = 0;

  /** Reads `packet[0..length)`. */
  read(packet: Uint8Array, length: number): ReadOutcome {
    this.ednsPayload = 0;
    this.nameLength = 0;
    if (length < HEADER_BYTES) return ReadOutcome.Drop;
    this.id = (packet[0] << 8) | packet[1];
    this.flags = (packet[2] << 8) | packet[3];
    if ((packet[2] & 0x80) !== 0) return ReadOutcome.Drop; // a response: answering it could start a loop
    if ((packet[2] & 0x78) !== 0) return ReadOutcome.NotImp;
    const qdcount = (packet[4] << 8) | packet[5];
    if (qdcount !== 1) return ReadOutcome.FormErr;
    let at = this.readName(packet, length, HEADER_BYTES);
    if (at < 0 || at + 4 > length) return ReadOutcome.FormErr;
    this.qtype = (packet[at] << 8) | packet[at + 1];
    this.qclass = (packet[at + 2] << 8) | packet[at + 3];
    at += 4;
    // Answer and authority records have no place in a query, but are skipped as any reader would.
    const records = ((packet[6] << 8) | packet[7]) + ((packet[8] << 8) | packet[9]);
    for (let i = 0; i < records; i++) {
      at = skipRecord(packet, length, at);
      if (at < 0) return ReadOutcome.FormErr;
    }
    const additional = (packet[10] << 8) | packet[11];
    let sawOpt = false;
    for (let i = 0; i < additional; i++) {
      const nameEnd = skipName(packet, length, at);
      if (nameEnd < 0 || nameEnd + 10 > length) return ReadOutcome.FormErr;
      const type = (packet[nameEnd] << 8) | packet[nameEnd + 1];
      if (type === QType.OPT) {
        // One OPT, owned by the root (RFC 6891 6.1.1).
        if (sawOpt || nameEnd !== at + 1) return ReadOutcome.FormErr;
        sawOpt = true;
        this.ednsPayload = Math.max(CLASSIC_UDP_PAYLOAD, (packet[nameEnd + 2] << 8) | packet[nameEnd + 3]);
        if (packet[nameEnd + 5] !== 0) return ReadOutcome.BadVersion;
      }
      at = nameEnd + 10 + ((packet[nameEnd + 8] << 8) | packet[nameEnd + 9]);
      if (at > length) return ReadOutcome.FormErr;
    }
    return ReadOutcome.Query;
  }

  /** The question's name as text (`d.c.b.a.zone.`), bytes other than letters, digits, `-` and `_` as `\DDD`: for logs. */
  questionText(): string {
    const name = this.name;
    let text = "";
    let at = 0;
    while (at < this.nameLength && name[at] !== 0) {
      const len = name[at];
      for (let k = at + 1; k <= at + len; k++) {
        const c = name[k];
        const plain = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2d || c === 0x5f;
        text += plain ? String.fromCharCode(c) : `\\${String(c).padStart(3, "0")}`;
      }
      text += ".";
      at += len + 1;
    }
    return text === "" ? "." : text;
  }

  /** Whether the question's class is IN (or ANY). */
  get classIn(): boolean {
    return this.qclass === CLASS_IN || this.qclass === CLASS_ANY;
  }

  /** Reads the name at `at` into `name`/`lowerName`; the offset after it in the packet, or -1 when malformed. */
  private readName(packet: Uint8Array, length: number, at: number): number {
    const name = this.name;
    const lower = this.lowerName;
    let out = 0;
    let after = -1;
    let hops = 0;
    // A pointer must point before the earliest place read so far: a loop can never close.
    let floor = at;
    for (;;) {
      if (at >= length) return -1;
      const len = packet[at];
      if (len === 0) {
        name[out] = lower[out] = 0;
        this.nameLength = out + 1;
        return after >= 0 ? after : at + 1;
      }
      const kind = len & 0xc0;
      if (kind === 0xc0) {
        if (at + 1 >= length || ++hops > MAX_POINTER_HOPS) return -1;
        const target = ((len & 0x3f) << 8) | packet[at + 1];
        if (after < 0) after = at + 2;
        if (target >= floor) return -1;
        floor = target;
        at = target;
        continue;
      }
      if (kind !== 0) return -1; // 0x40 and 0x80: label types nobody uses
      if (at + 1 + len > length || out + 1 + len + 1 > MAX_NAME_BYTES) return -1;
      name[out] = lower[out] = len;
      out++;
      for (let k = 1; k <= len; k++) {
        const c = packet[at + k];
        name[out] = c;
        lower[out] = c >= 0x41 && c <= 0x5a ? c | 0x20 : c;
        out++;
      }
      at += len + 1;
    }
  }
}

/** The offset after the (possibly compressed) name at `at`, or -1; only skips, so it follows no pointer. */
function skipName(packet: Uint8Array, length: number, at: number): number {
  for (let steps = 0; steps < 128; steps++) {
    if (at >= length) return -1;
    const len = packet[at];
    if (len === 0) return at + 1;
    if ((len & 0xc0) === 0xc0) return at + 2 <= length ? at + 2 : -1;
    if ((len & 0xc0) !== 0) return -1;
    at += len + 1;
  }
  return -1;
}

function skipRecord(packet: Uint8Array, length: number, at: number): number {
  const nameEnd = skipName(packet, length, at);
  if (nameEnd < 0 || nameEnd + 10 > length) return -1;
  const end = nameEnd + 10 + ((packet[nameEnd + 8] << 8) | packet[nameEnd + 9]);
  return end > length ? -1 : end;
}

// ---------------------------------------------------------------------------------------------------------
// Writing

export function put16(out: Uint8Array, at: number, value: number): number {
  out[at] = value >>> 8;
  out[at + 1] = value & 0xff;
  return at + 2;
}

export function put32(out: Uint8Array, at: number, value: number): number {
  out[at] = value >>> 24;
  out[at + 1] = (value >>> 16) & 0xff;
  out[at + 2] = (value >>> 8) & 0xff;
  out[at + 3] = value & 0xff;
  return at + 4;
}

/** Header flags of an answer: QR, the query's opcode and RD, `AA` when authoritative, RA clear, and `rcode`. */
export function answerFlags(queryFlags: number, authoritative: boolean, rcode: number): number {
  return 0x8000 | (queryFlags & 0x7900) | (authoritative ? 0x0400 : 0) | (rcode & 0xf);
}

export const TC_FLAG = 0x0200;

/** Writes a header at 0; returns 12. */
export function putHeader(out: Uint8Array, id: number, flags: number, qd: number, an: number, ns: number, ar: number): number {
  put16(out, 0, id);
  put16(out, 2, flags);
  put16(out, 4, qd);
  put16(out, 6, an);
  put16(out, 8, ns);
  put16(out, 10, ar);
  return HEADER_BYTES;
}

/** Bytes of our OPT record: root name, type 41, payload 1232, extended rcode and version 0, no options. */
export const OPT_RECORD_BYTES = 11;

/** Writes our OPT record at `at` (`extendedRcode`: the upper 8 bits of a 12-bit rcode, e.g. 1 for BADVERS). */
export function putOpt(out: Uint8Array, at: number, extendedRcode = 0): number {
  out[at] = 0;
  put16(out, at + 1, QType.OPT);
  put16(out, at + 3, EDNS_PAYLOAD);
  out[at + 5] = extendedRcode;
  out[at + 6] = 0; // version
  put16(out, at + 7, 0); // flags: DO clear, we sign nothing
  put16(out, at + 9, 0);
  return at + OPT_RECORD_BYTES;
}

/** The bytes of a resource record whose owner is the compression pointer `owner` (an offset in the message). */
export function recordBytes(owner: number, type: number, ttl: number, rdata: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + rdata.length);
  put16(out, 0, 0xc000 | owner);
  put16(out, 2, type);
  put16(out, 4, CLASS_IN);
  put32(out, 6, ttl);
  put16(out, 10, rdata.length);
  out.set(rdata, 12);
  return out;
}

/** One TXT character-string of at most 255 bytes (the text is cut by the caller). */
export function txtRdata(text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length > 255) throw new RangeError("a TXT string holds at most 255 bytes");
  const out = new Uint8Array(bytes.length + 1);
  out[0] = bytes.length;
  out.set(bytes, 1);
  return out;
}

export function ipv4Rdata(value: number): Uint8Array {
  const out = new Uint8Array(4);
  put32(out, 0, value);
  return out;
}
