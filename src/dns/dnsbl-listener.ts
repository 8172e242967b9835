// `serve --dns-port`: the DNS blocklist of contract 17 made from the configuration, for `serve` (data directory or
// --snapshot) and `serve --follow` (whose source changes with each snapshot, and is none before the first).

import type { Config } from "../config";
import type { Clock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { tryParseCidr, tryParseIpv4Value } from "../domain/ip";
import { CidrSet } from "../index/cidr-set";
import { DnsCounters } from "../services/metrics/dns-counters";
import type { Services } from "../services/services";
import { type DnsListener, startDnsListener } from "./dns-server";
import { type DnsblSource, DnsblResponder } from "./responder";

export interface DnsblService {
  readonly listener: DnsListener;
  readonly responder: DnsblResponder;
  readonly counters: DnsCounters;
  /** Answers from these services from now on (an edge's new snapshot); null answers SERVFAIL. */
  use(services: Services | null): void;
  /** `dns blocklist ZONE on udp+tcp HOST:PORT`: what the start line says. */
  readonly description: string;
  stop(): void;
}

/** What the zone answers from, out of one instance's services. */
export function dnsblSourceOf(services: Services): DnsblSource {
  return {
    index: services.index,
    allowlist: services.allowlist,
    expireDue: () => void services.reputation.expireDue(),
    networksAround: (ip) => services.reputation.networksAround(ip),
  };
}

/**
 * Starts the listener when `--dns-port` is set (else null), answering from `services` (null until an edge has
 * a snapshot). A port in use or an address that cannot be bound stops the caller with an error naming them.
 */
export async function startDnsbl(config: Config, clock: Clock, services: Services | null): Promise<DnsblService | null> {
  if (config.dnsPort === null) return null;
  const hostname = config.dnsHost ?? config.host;
  const v4 = tryParseIpv4Value(hostname);
  const responder = new DnsblResponder({ zone: config.dnsZone, ttl: config.dnsTtl, riskLevel: config.dnsRiskLevel, nameServerV4: v4 > 0 ? v4 : null }, clock);
  const counters = new DnsCounters();
  let allow: CidrSet | null = null;
  if (config.dnsAllow !== null) {
    allow = new CidrSet();
    config.dnsAllow.forEach((text, id) => {
      const cidr = tryParseCidr(text);
      if (typeof cidr !== "string") allow!.add(cidr, id);
    });
  }
  const use = (s: Services | null) => {
    responder.setSource(s === null ? null : dnsblSourceOf(s));
    if (s !== null) s.metrics.dns = counters;
  };
  use(services);
  let listener: DnsListener;
  try {
    listener = await startDnsListener({ hostname, port: config.dnsPort, responder, counters, allow, accessLog: config.accessLog });
  } catch (error) {
    throw new AppError("bad_request", `cannot listen for DNS (--dns-port) on ${hostname}:${config.dnsPort}: ${(error as Error).message}`);
  }
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    listener,
    responder,
    counters,
    use,
    description: `DNS blocklist ${config.dnsZone} on udp+tcp ${shown}:${listener.port}`,
    stop: () => listener.stop(),
  };
}
