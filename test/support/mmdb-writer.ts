// A minimal MaxMind DB (format 2.0) writer for tests and benchmarks: binary search tree over the networks,
// 16-byte separator, data section, metadata. Nested networks are allowed (the more specific one wins); identical
// data values are stored once. https://maxmind.github.io/MaxMind-DB/

import { tryParseCidr } from "../../src/domain/ip";

export interface MmdbEntry {
  /** `a.b.c.d/len`, `v6::/len`, or a bare address (a /32 or /128). */
  cidr: string;
  data: Record<string, unknown>;
}

export interface MmdbOptions {
  /** Tree width; default 6 when any entry is IPv6, else 4. IPv4 entries in a v6 tree go under ::/96. */
  ipVersion?: 4 | 6;
  databaseType?: string;
  description?: string;
  languages?: string[];
  /** Seconds since the epoch; default now. */
  buildEpoch?: number;
  /** Bits per search-tree record; default the smallest that fits (24, 28 or 32). */
  recordSize?: 24 | 28 | 32;
}

const DATA_REF = 0x80000000;
const EMPTY = 0;

/** Unsigned 16-bit integers in the metadata (the spec types them; plain numbers encode as uint32). */
class Uint16Value {
  constructor(readonly value: number) {}
}

class ByteSink {
  bytes = new Uint8Array(1 << 16);
  length = 0;
  private ensure(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }
  byte(b: number): void {
    this.ensure(1);
    this.bytes[this.length++] = b;
  }
  append(chunk: Uint8Array): void {
    this.ensure(chunk.length);
    this.bytes.set(chunk, this.length);
    this.length += chunk.length;
  }
  result(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

const encoder = new TextEncoder();

function writeControl(out: ByteSink, type: number, size: number): void {
  const typeBits = type > 7 ? 0 : type;
  let sizeBits: number;
  let extra: number[];
  if (size < 29) {
    sizeBits = size;
    extra = [];
  } else if (size < 285) {
    sizeBits = 29;
    extra = [size - 29];
  } else if (size < 65821) {
    sizeBits = 30;
    extra = [(size - 285) >> 8, (size - 285) & 0xff];
  } else {
    sizeBits = 31;
    const s = size - 65821;
    extra = [(s >> 16) & 0xff, (s >> 8) & 0xff, s & 0xff];
  }
  out.byte((typeBits << 5) | sizeBits);
  if (type > 7) out.byte(type - 7);
  for (const b of extra) out.byte(b);
}

function writeUnsigned(out: ByteSink, type: number, value: bigint): void {
  const bytes: number[] = [];
  for (let v = value; v > 0n; v >>= 8n) bytes.unshift(Number(v & 0xffn));
  writeControl(out, type, bytes.length);
  for (const b of bytes) out.byte(b);
}

function writeValue(out: ByteSink, value: unknown): void {
  if (value instanceof Uint16Value) {
    writeUnsigned(out, 5, BigInt(value.value));
  } else if (typeof value === "string") {
    const bytes = encoder.encode(value);
    writeControl(out, 2, bytes.length);
    out.append(bytes);
  } else if (typeof value === "number") {
    if (Number.isInteger(value) && value >= 0 && value <= 0xffffffff) writeUnsigned(out, 6, BigInt(value));
    else if (Number.isInteger(value) && value > 0xffffffff && Number.isSafeInteger(value)) writeUnsigned(out, 9, BigInt(value));
    else if (Number.isInteger(value) && value < 0 && value >= -0x80000000) {
      writeControl(out, 8, 4);
      const v = value >>> 0;
      out.byte(v >>> 24);
      out.byte((v >>> 16) & 0xff);
      out.byte((v >>> 8) & 0xff);
      out.byte(v & 0xff);
    } else {
      writeControl(out, 3, 8);
      const b = new Uint8Array(8);
      new DataView(b.buffer).setFloat64(0, value, false);
      out.append(b);
    }
  } else if (typeof value === "bigint") {
    if (value < 0n || value >= 1n << 128n) throw new Error(`bigint ${value} does not fit an unsigned 128-bit integer`);
    writeUnsigned(out, value < 1n << 64n ? 9 : 10, value);
  } else if (typeof value === "boolean") {
    writeControl(out, 14, value ? 1 : 0);
  } else if (value instanceof Uint8Array) {
    writeControl(out, 4, value.length);
    out.append(value);
  } else if (Array.isArray(value)) {
    writeControl(out, 11, value.length);
    for (const item of value) writeValue(out, item);
  } else if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] != null);
    writeControl(out, 7, keys.length);
    for (const key of keys) {
      writeValue(out, key);
      writeValue(out, (value as Record<string, unknown>)[key]);
    }
  } else {
    throw new Error(`cannot encode ${String(value)} in a MaxMind DB`);
  }
}

interface ParsedNetwork {
  /** Four words, most significant first; IPv4 in words[3]. */
  words: Uint32Array;
  prefix: number;
  version: 4 | 6;
}

/** A network in the writer's terms, parsed by the product's own CIDR parser. */
export function parseNetwork(cidr: string): ParsedNetwork {
  const parsed = tryParseCidr(cidr);
  if (typeof parsed === "string") throw new Error(`bad network ${cidr}: ${parsed}`);
  const { network, prefixLength, version } = parsed;
  const words = network.version === 4 ? Uint32Array.of(0, 0, 0, network.value) : Uint32Array.from(network.words);
  return { words, prefix: prefixLength, version };
}

export function writeMmdb(entries: MmdbEntry[], options: MmdbOptions = {}): Uint8Array {
  const networks = entries.map((e) => parseNetwork(e.cidr));
  const ipVersion = options.ipVersion ?? (networks.some((n) => n.version === 6) ? 6 : 4);
  // Shorter prefixes first, so a more specific network splits its parent's leaf instead of being overwritten.
  const order = networks.map((_, i) => i);
  const effective = networks.map((n) => {
    if (n.version === 6 && ipVersion === 4) throw new Error("an IPv4 database cannot hold IPv6 networks");
    return n.version === 4 && ipVersion === 6 ? n.prefix + 96 : n.prefix;
  });
  order.sort((a, b) => effective[a] - effective[b] || a - b);

  // Data section, each distinct value encoded once.
  const data = new ByteSink();
  const dataOffsets: number[] = [];
  const dataIdByKey = new Map<string, number>();
  const dataIdOf = (value: Record<string, unknown>): number => {
    const key = JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `${v}n` : v));
    let id = dataIdByKey.get(key);
    if (id === undefined) {
      id = dataOffsets.length;
      dataOffsets.push(data.length);
      writeValue(data, value);
      dataIdByKey.set(key, id);
    }
    return id;
  };

  // The tree in two growable arrays of records: 0 = empty, a node id, or DATA_REF | data id.
  let left = new Uint32Array(1 << 16);
  let right = new Uint32Array(1 << 16);
  let nodeCount = 1;
  const newNode = (l: number, r: number): number => {
    if (nodeCount === left.length) {
      const grow = (a: Uint32Array) => {
        const b = new Uint32Array(a.length * 2);
        b.set(a);
        return b;
      };
      left = grow(left);
      right = grow(right);
    }
    left[nodeCount] = l;
    right[nodeCount] = r;
    return nodeCount++;
  };
  for (const i of order) {
    const net = networks[i];
    const prefix = effective[i];
    const ref = (DATA_REF | dataIdOf(entries[i].data)) >>> 0;
    const bitAt = (d: number): number => {
      const k = ipVersion === 4 ? d + 96 : d;
      return (net.words[k >>> 5] >>> (31 - (k & 31))) & 1;
    };
    if (prefix === 0) {
      left[0] = ref;
      right[0] = ref;
      continue;
    }
    let node = 0;
    for (let d = 0; d < prefix - 1; d++) {
      const bit = bitAt(d);
      const record = bit ? right[node] : left[node];
      if (record !== EMPTY && record < DATA_REF) {
        node = record;
      } else {
        const child = newNode(record, record);
        if (bit) right[node] = child;
        else left[node] = child;
        node = child;
      }
    }
    if (bitAt(prefix - 1)) right[node] = ref;
    else left[node] = ref;
  }

  const dataBytes = data.result();
  const maxRecord = nodeCount + 16 + dataBytes.length;
  const fits = maxRecord < 2 ** 24 ? 24 : maxRecord < 2 ** 28 ? 28 : 32;
  const recordSize = Math.max(fits, options.recordSize ?? 0);
  const nodeBytes = recordSize / 4;
  const tree = new Uint8Array(nodeCount * nodeBytes);
  const resolve = (record: number): number =>
    record === EMPTY ? nodeCount : record >= DATA_REF ? nodeCount + 16 + dataOffsets[record - DATA_REF] : record;
  for (let n = 0; n < nodeCount; n++) {
    const l = resolve(left[n]);
    const r = resolve(right[n]);
    const o = n * nodeBytes;
    if (recordSize === 24) {
      tree[o] = l >>> 16; tree[o + 1] = l >>> 8; tree[o + 2] = l;
      tree[o + 3] = r >>> 16; tree[o + 4] = r >>> 8; tree[o + 5] = r;
    } else if (recordSize === 28) {
      tree[o] = l >>> 16; tree[o + 1] = l >>> 8; tree[o + 2] = l;
      tree[o + 3] = ((l >>> 24) << 4) | (r >>> 24);
      tree[o + 4] = r >>> 16; tree[o + 5] = r >>> 8; tree[o + 6] = r;
    } else {
      tree[o] = l >>> 24; tree[o + 1] = l >>> 16; tree[o + 2] = l >>> 8; tree[o + 3] = l;
      tree[o + 4] = r >>> 24; tree[o + 5] = r >>> 16; tree[o + 6] = r >>> 8; tree[o + 7] = r;
    }
  }

  const metadata = new ByteSink();
  metadata.append(Uint8Array.of(0xab, 0xcd, 0xef, ...encoder.encode("MaxMind.com")));
  writeValue(metadata, {
    node_count: nodeCount,
    record_size: new Uint16Value(recordSize),
    ip_version: new Uint16Value(ipVersion),
    database_type: options.databaseType ?? "abuse-intel-test",
    languages: options.languages ?? ["en"],
    binary_format_major_version: new Uint16Value(2),
    binary_format_minor_version: new Uint16Value(0),
    build_epoch: BigInt(options.buildEpoch ?? Math.floor(Date.now() / 1000)),
    description: { en: options.description ?? "written by test/support/mmdb-writer.ts" },
  });
  const meta = metadata.result();

  const out = new Uint8Array(tree.length + 16 + dataBytes.length + meta.length);
  out.set(tree, 0);
  out.set(dataBytes, tree.length + 16);
  out.set(meta, tree.length + 16 + dataBytes.length);
  return out;
}
