// The DNS listener (contract 17): UDP and TCP on one port, a transport beside the HTTP one. TCP follows RFC 7766:
// each message has a 2-byte length in front, several queries may come on one connection and are answered in
// order, and a connection idle for 10 s is closed. Open connections are capped: past the cap the one idle the
// longest is closed, so thousands of idle connections cost bounded memory. Nothing a client sends stops the
// listener: a query that throws is dropped and logged, and the next one is answered.

import type { CidrSet } from "../index/cidr-set";
import { tryParseIp } from "../domain/ip";
import { DNS_RCODES, type DnsCounters } from "../services/metrics/dns-counters";
import type { DnsblResponder } from "./responder";
import { put16, QType } from "./wire";

export interface DnsListenerOptions {
  hostname: string;
  /** 0 picks a free port (the same for UDP and TCP). */
  port: number;
  responder: DnsblResponder;
  counters: DnsCounters;
  /** Sources allowed to ask; others are answered REFUSED. Null: any. */
  allow: CidrSet | null;
  /** One stderr line per query. */
  accessLog: boolean;
  /** Open TCP connections at most (default 512). */
  maxConnections?: number;
  /** Seconds a TCP connection may stay idle (default 10). */
  idleSeconds?: number;
}

export interface DnsListener {
  readonly hostname: string;
  readonly port: number;
  /** Open TCP connections now. */
  readonly connections: number;
  stop(): void;
}

/** A TCP query longer than this closes the connection: real queries are a few hundred bytes. */
const MAX_TCP_QUERY = 4096;
/** Answers waiting for a client that does not read, per connection, before it is closed. */
const MAX_UNSENT = 64 * 1024;
/** Sources whose --dns-allow verdict is remembered. */
const ALLOW_CACHE_LIMIT = 4096;
/** UDP answers sent in one sendMany at most. */
const UDP_BATCH = 256;
/** Attempts to find a port free for both UDP and TCP when asked for port 0. */
const PORT_ATTEMPTS = 20;

interface Connection {
  /** An incomplete message received so far (its first `partialLength` bytes, length prefix included). */
  partial: Uint8Array | null;
  partialLength: number;
  /** Answers the socket did not take yet. */
  unsent: Uint8Array | null;
  address: string;
  refused: boolean;
}

type TcpSocket = Bun.Socket<Connection>;

export async function startDnsListener(options: DnsListenerOptions): Promise<DnsListener> {
  const { responder, counters, hostname } = options;
  const maxConnections = options.maxConnections ?? 512;
  const idleSeconds = options.idleSeconds ?? 10;
  const allowed = allowChecker(options.allow);
  const log = options.accessLog ? accessLogLine : null;
  /** Open connections, least recently active first (a Map keeps insertion order; activity re-inserts). */
  const open = new Map<TcpSocket, true>();

  /** Answers one message; returns the answer's length in responder.buffer (from offset 2), or -1. */
  function answer(packet: Uint8Array, length: number, tcp: boolean, address: string, refused: boolean): number {
    const started = log === null ? 0 : performance.now();
    let n: number;
    try {
      n = responder.respond(packet, length, !tcp, refused);
    } catch (error) {
      console.error("dns: a query failed (dropped):", error);
      return -1;
    }
    if (n < 0) return -1;
    counters.record(tcp, responder.rcode, responder.listed);
    log?.(tcp, address, responder, started);
    return n;
  }

  /** Error codes other than a closed client port already logged (once each). */
  const loggedCodes = new Set<string>();
  /**
   * An answer that could not be sent costs a count and nothing else: a client that gave up and closed its port
   * (ICMP port unreachable fails a later send or receive with ECONNREFUSED) is routine, and spoofed sources make
   * it common, so no line per packet; another kind of error is logged the first time it is seen.
   */
  function udpFailed(error: unknown): void {
    counters.udpErrors++;
    const code = (error as { code?: unknown } | null)?.code;
    const name = typeof code === "string" ? code : String(error);
    if (name === "ECONNREFUSED" || loggedCodes.has(name) || loggedCodes.size >= 16) return;
    loggedCodes.add(name);
    console.error(`dns: a UDP answer failed (${name}); counted in abuse_intel_dns_udp_errors_total, not logged again:`, error);
  }

  // UDP answers wait for the end of the event-loop turn and go out in one sendMany (one sendmmsg): Bun reads
  // datagrams in batches but sends each with its own syscall, and that syscall was most of the CPU per query.
  /** Answers to send: answer, port, address, answer, port, address, ... */
  const batch: (Uint8Array | number | string)[] = [];
  let flushScheduled = false;
  let udpSocket: Bun.udp.Socket<"buffer"> | null = null;

  function flushUdp(): void {
    flushScheduled = false;
    const socket = udpSocket;
    if (socket === null || batch.length === 0) return void (batch.length = 0);
    let at = 0;
    let retried = false;
    while (at < batch.length) {
      try {
        const sent = socket.sendMany(at === 0 ? batch : batch.slice(at));
        // The socket's buffer is full: the rest are dropped, as the kernel drops datagrams.
        if (sent === 0) {
          counters.udpErrors += (batch.length - at) / 3;
          break;
        }
        at += sent * 3;
        retried = false;
      } catch (error) {
        // The error may be an earlier answer's (ICMP port unreachable): try this one again once, then drop it.
        udpFailed(error);
        if (retried) at += 3;
        retried = !retried;
      }
    }
    batch.length = 0;
  }

  const udpHandler = {
    data(socket: Bun.udp.Socket<"buffer">, data: Buffer, port: number, address: string) {
      const n = answer(data, data.length, false, address, !allowed(address));
      if (n < 0) return;
      udpSocket = socket;
      batch.push(responder.buffer.slice(2, 2 + n), port, address);
      if (batch.length >= UDP_BATCH * 3) flushUdp();
      else if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flushUdp);
      }
    },
    // Bun 1.4 passes the error as the first argument (its types say the socket, then the error).
    error(...args: unknown[]) {
      udpFailed(args.find((a) => a instanceof Error) ?? args[0]);
    },
  };

  const tcpHandler: Bun.SocketHandler<Connection> = {
    open(socket) {
      if (open.size >= maxConnections) {
        const idlest = open.keys().next().value as TcpSocket;
        open.delete(idlest);
        idlest.terminate();
      }
      socket.data = { partial: null, partialLength: 0, unsent: null, address: socket.remoteAddress, refused: !allowed(socket.remoteAddress) };
      open.set(socket, true);
      socket.timeout(idleSeconds);
    },
    data(socket, chunk) {
      const c = socket.data;
      open.delete(socket);
      open.set(socket, true);
      socket.timeout(idleSeconds);
      let at = 0;
      while (at < chunk.length) {
        const rest = chunk.length - at;
        if (c.partialLength === 0 && rest >= 2) {
          // Whole messages in the chunk are answered where they lie.
          const length = (chunk[at] << 8) | chunk[at + 1];
          if (length > MAX_TCP_QUERY) return void socket.terminate();
          if (rest >= 2 + length) {
            if (!reply(socket, chunk.subarray(at + 2, at + 2 + length), length)) return void socket.terminate();
            at += 2 + length;
            continue;
          }
        }
        // A message split across chunks is gathered in the connection's buffer, never longer than a query may be.
        const buffer = (c.partial ??= new Uint8Array(MAX_TCP_QUERY + 2));
        if (c.partialLength < 2) {
          buffer[c.partialLength++] = chunk[at++];
          if (c.partialLength < 2) continue;
        }
        const length = (buffer[0] << 8) | buffer[1];
        if (length > MAX_TCP_QUERY) return void socket.terminate();
        const take = Math.min(2 + length - c.partialLength, chunk.length - at);
        buffer.set(chunk.subarray(at, at + take), c.partialLength);
        c.partialLength += take;
        at += take;
        if (c.partialLength === 2 + length) {
          c.partialLength = 0;
          if (!reply(socket, buffer.subarray(2, 2 + length), length)) return void socket.terminate();
        }
      }
    },
    drain(socket) {
      const c = socket.data;
      if (c.unsent === null) return;
      const rest = c.unsent;
      c.unsent = null;
      send(socket, rest);
    },
    timeout(socket) {
      socket.end();
    },
    close(socket) {
      open.delete(socket);
    },
    error(socket) {
      open.delete(socket);
    },
  };

  /** Answers one TCP message and writes the answer with its length in front; false when the client reads too little. */
  function reply(socket: TcpSocket, message: Uint8Array, length: number): boolean {
    const c = socket.data;
    const n = answer(message, length, true, c.address, c.refused);
    if (n < 0) return true;
    put16(responder.buffer, 0, n);
    return send(socket, responder.buffer.subarray(0, n + 2));
  }

  /** Writes `bytes` or keeps what the socket did not take (a copy); false when too much waits already. */
  function send(socket: TcpSocket, bytes: Uint8Array): boolean {
    const c = socket.data;
    if (c.unsent !== null) {
      if (c.unsent.length + bytes.length > MAX_UNSENT) return false;
      const joined = new Uint8Array(c.unsent.length + bytes.length);
      joined.set(c.unsent, 0);
      joined.set(bytes, c.unsent.length);
      c.unsent = joined;
      return true;
    }
    const written = socket.write(bytes);
    if (written < bytes.length) c.unsent = bytes.slice(Math.max(0, written));
    return true;
  }

  let lastError: unknown = null;
  for (let attempt = 0; attempt < (options.port === 0 ? PORT_ATTEMPTS : 1); attempt++) {
    const udp = await Bun.udpSocket({ hostname, port: options.port, socket: udpHandler });
    let tcp: Bun.TCPSocketListener<Connection>;
    try {
      tcp = Bun.listen<Connection>({ hostname, port: udp.port, exclusive: true, socket: tcpHandler });
    } catch (error) {
      udp.close();
      lastError = error;
      continue;
    }
    return {
      hostname,
      port: udp.port,
      get connections() {
        return open.size;
      },
      stop() {
        batch.length = 0;
        udp.close();
        tcp.stop(true);
        for (const socket of open.keys()) socket.terminate();
        open.clear();
      },
    };
  }
  throw lastError;
}

/** The --dns-allow test of a source address, remembered per address text. */
function allowChecker(allow: CidrSet | null): (address: string) => boolean {
  if (allow === null) return () => true;
  const known = new Map<string, boolean>();
  return (address) => {
    let verdict = known.get(address);
    if (verdict === undefined) {
      const ip = tryParseIp(address);
      verdict = typeof ip !== "string" && allow.contains(ip);
      if (known.size >= ALLOW_CACHE_LIMIT) known.clear();
      known.set(address, verdict);
    }
    return verdict;
  };
}

const TYPE_NAMES = new Map<number, string>([...Object.entries(QType)].map(([name, code]) => [code, name]));

/** `--access-log`: `TIME DNS udp SOURCE NAME TYPE RCODE 0.1ms` on stderr, as the HTTP line has time, request, status, duration. */
function accessLogLine(tcp: boolean, address: string, responder: DnsblResponder, started: number): void {
  const q = responder.reader;
  const name = q.nameLength > 0 ? q.questionText() : "-";
  const type = q.nameLength > 0 ? (TYPE_NAMES.get(q.qtype) ?? `TYPE${q.qtype}`) : "-";
  const ms = (performance.now() - started).toFixed(1);
  process.stderr.write(`${new Date().toISOString()} DNS ${tcp ? "tcp" : "udp"} ${address} ${name} ${type} ${DNS_RCODES[responder.rcode] ?? responder.rcode}${responder.listed ? " listed" : ""} ${ms}ms\n`);
}
