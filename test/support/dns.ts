// The DNS blocklist in tests: a harness instance with its DNS listener on 127.0.0.1 and a free port, and Debian's
// `dig` (bind9-dnsutils) as the client, run as a process with its output parsed. Shared by the DNS tests and the
// mail-server (Postfix) tests.

import { defaultConfig, type Config } from "../../src/config";
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
