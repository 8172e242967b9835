// The DNS blocklist in tests: a harness instance with its DNS listener on 127.0.0.1 and a free port, and Debian's
// `dig` (bind9-dnsutils) as the client, run as a process with its output parsed. Shared by the DNS tests and the
// mail-server (Postfix) tests.

import { defaultConfig, type Config } from "../../src/config";
import { parseIp } from "../../src/domain/ip";
import { type DnsblService, startDnsbl } from "../../src/dns/dnsbl-listener";
import { createHarness, type Harness, type HarnessOptions } from "./harness";

export const TEST_ZONE = "dnsbl.test.example";

export interface DnsHarness {
  harness: Harness;
  dns: DnsblService;
  port: number;
  /** dig against this listener (see digAt). */
  dig(name: string, type?: string, options?: DigOptions): Promise<DigAnswer>;
  close(): Promise<void>;
}

/** What a test gives of a record it puts straight into the index: the rest is "no verified report, seen now". */
export interface ListedRecord {
  reputationScore: number;
  totalReports: number;
  categoriesMask: number;
}

/** Puts `ip` into the DNS harness's index with `record` (first and last seen at the harness clock's now). */
export function putInIndex(d: DnsHarness, ip: string, record: ListedRecord): void {
  const now = d.harness.clock.now();
  d.harness.services.index.upsert(parseIp(ip), { ...record, verifiedReports: 0, lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now });
}

/**
 * A harness (real store, real services, manual clock) whose DNS listener answers `TEST_ZONE` on 127.0.0.1 and a
 * free port. `overrides` set the configuration (dnsRiskLevel, dnsTtl, dnsAllow, ...).
 */
export async function createDnsHarness(overrides: Partial<Config> = {}, options: HarnessOptions = {}): Promise<DnsHarness> {
  const harness = await createHarness({ dnsZone: TEST_ZONE, ...overrides }, options);
  const config: Config = { ...defaultConfig(), ...harness.services.config, dnsPort: 0, dnsHost: "127.0.0.1", dnsZone: TEST_ZONE, ...overrides };
  const dns = await startDnsbl(config, harness.clock, harness.services);
  if (dns === null) throw new Error("no DNS listener");
  return {
    harness,
    dns,
    port: dns.listener.port,
    dig: (name, type = "A", digOptions = {}) => digAt(dns.listener.port, name, type, digOptions),
    async close() {
      dns.stop();
      await harness.close();
    },
  };
}

export interface DigOptions {
  tcp?: boolean;
  /** false: no EDNS (+noedns); a number: that UDP payload size (+bufsize). Default: dig's EDNS0. */
  edns?: boolean | number;
  /** Keep a truncated UDP answer instead of retrying over TCP (+ignore). */
  ignoreTruncation?: boolean;
  /** More dig options. */
  extra?: string[];
  host?: string;
}

export interface DigRecord {
  name: string;
  ttl: number;
  type: string;
  data: string;
}

export interface DigAnswer {
  /** NOERROR, NXDOMAIN, REFUSED, ...; null when no answer came. */
  status: string | null;
  /** Header flags: qr, aa, rd, ra, tc. */
  flags: string[];
  answer: DigRecord[];
  authority: DigRecord[];
  /** The OPT record's UDP size, or null when the answer had no OPT. */
  ednsUdp: number | null;
  /** The question section as dig printed it (name and type), or null. */
  question: string | null;
  /** dig's whole output, for failure messages. */
  raw: string;
}

/** Runs `dig @HOST -p PORT NAME TYPE +norec` and parses what it printed. */
export async function digAt(port: number, name: string, type = "A", options: DigOptions = {}): Promise<DigAnswer> {
  const args = ["dig", `@${options.host ?? "127.0.0.1"}`, "-p", String(port), name, type, "+norec", "+nocookie", "+time=5", "+tries=3"];
  if (options.tcp) args.push("+tcp");
  if (options.edns === false) args.push("+noedns");
  else if (typeof options.edns === "number") args.push(`+bufsize=${options.edns}`);
  if (options.ignoreTruncation) args.push("+ignore");
  args.push(...(options.extra ?? []));
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return parseDig(out + err);
}

export function parseDig(raw: string): DigAnswer {
  const status = /status: ([A-Z0-9]+)/.exec(raw)?.[1] ?? null;
  const flags = /;; flags: ([a-z ]*);/.exec(raw)?.[1].trim().split(/\s+/).filter(Boolean) ?? [];
  const udp = /; EDNS: version: \d+, flags:[^;]*; udp: (\d+)/.exec(raw);
  const question = /;; QUESTION SECTION:\n;(.*)/.exec(raw)?.[1].replace(/\s+/g, " ").trim() ?? null;
  return { status, flags, answer: section(raw, "ANSWER"), authority: section(raw, "AUTHORITY"), ednsUdp: udp ? Number(udp[1]) : null, question, raw };
}

function section(raw: string, name: string): DigRecord[] {
  const start = raw.indexOf(`;; ${name} SECTION:\n`);
  if (start < 0) return [];
  const lines = raw.slice(start).split("\n").slice(1);
  const records: DigRecord[] = [];
  for (const line of lines) {
    if (line.trim() === "" || line.startsWith(";")) break;
    const [owner, ttl, , type, ...rest] = line.split(/\s+/);
    records.push({ name: owner, ttl: Number(ttl), type, data: rest.join(" ") });
  }
  return records;
}

/** `d.c.b.a.ZONE` for an IPv4 address. */
export function ipv4Name(address: string, zone = TEST_ZONE): string {
  return `${address.split(".").reverse().join(".")}.${zone}`;
}

/** The 32 reversed nibbles of a full IPv6 address (given as 8 groups or with ::), then the zone. */
export function ipv6Name(address: string, zone = TEST_ZONE): string {
  const [head, tail] = address.includes("::") ? address.split("::") : [address, ""];
  const h = head === "" ? [] : head.split(":");
  const t = tail === "" ? [] : tail.split(":");
  const groups = [...h, ...new Array(8 - h.length - t.length).fill("0"), ...t];
  const hex = groups.map((g) => g.padStart(4, "0")).join("");
  return `${[...hex].reverse().join(".")}.${zone}`;
}

/**
 * A UDP socket on 127.0.0.1 that sends raw packets to `port` and keeps every answer that comes back, in order.
 * `ask` sends one packet and waits for the next answer (null after `waitMs`).
 */
export async function rawUdpClient(port: number) {
  const answers: Uint8Array[] = [];
  let wake: (() => void) | null = null;
  const socket = await Bun.udpSocket({
    hostname: "127.0.0.1",
    socket: {
      data(_s, data) {
        answers.push(Uint8Array.from(data));
        wake?.();
      },
    },
  });
  const next = async (waitMs: number): Promise<Uint8Array | null> => {
    const deadline = Date.now() + waitMs;
    while (answers.length === 0 && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, Math.min(50, Math.max(1, deadline - Date.now())));
      });
      wake = null;
    }
    return answers.shift() ?? null;
  };
  return {
    send(packet: Uint8Array) {
      socket.send(packet, port, "127.0.0.1");
    },
    /** The next answer received (waiting up to `waitMs`), or null. */
    next,
    async ask(packet: Uint8Array, waitMs = 10_000): Promise<Uint8Array | null> {
      socket.send(packet, port, "127.0.0.1");
      return next(waitMs);
    },
    /** Answers received and not taken yet. */
    get waiting() {
      return answers.length;
    },
    close: () => socket.close(),
  };
}

/** A TCP connection to `port` that collects the bytes it receives and tells when the server closed it. */
export async function rawTcpClient(port: number) {
  let received = new Uint8Array(0);
  let closed = false;
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, chunk) {
        const joined = new Uint8Array(received.length + chunk.length);
        joined.set(received, 0);
        joined.set(chunk, received.length);
        received = joined;
      },
      close() {
        closed = true;
      },
      error() {
        closed = true;
      },
    },
  });
  return {
    write: (bytes: Uint8Array) => socket.write(bytes),
    get closed() {
      return closed;
    },
    /** Waits until `count` whole length-prefixed messages arrived (or `waitMs` passed); returns those there are. */
    async messages(count: number, waitMs = 10_000): Promise<Uint8Array[]> {
      const deadline = Date.now() + waitMs;
      for (;;) {
        const found = framed(received);
        if (found.length >= count || closed || Date.now() > deadline) return found;
        await Bun.sleep(10);
      }
    },
    /** Waits until the server closes the connection; true when it did within `waitMs`. */
    async closedWithin(waitMs: number): Promise<boolean> {
      const deadline = Date.now() + waitMs;
      while (!closed && Date.now() < deadline) await Bun.sleep(20);
      return closed;
    },
    end: () => socket.end(),
  };
}

/** The length-prefixed messages in a TCP byte stream (RFC 7766); an incomplete last one is left out. */
export function framed(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  while (bytes.length - at >= 2) {
    const length = (bytes[at] << 8) | bytes[at + 1];
    if (bytes.length - at - 2 < length) break;
    out.push(bytes.slice(at + 2, at + 2 + length));
    at += 2 + length;
  }
  return out;
}

/** `message` with its 2-byte length in front. */
export function withLength(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(message.length + 2);
  out[0] = message.length >> 8;
  out[1] = message.length & 0xff;
  out.set(message, 2);
  return out;
}
