// Which part of the address space an address or network lies in: the special-purpose ranges of the IANA
// registries (RFC 6890 and successors) by name, else "Internet". AbuseIPDB's `isPublic` is false inside any of them
// and `addressSpaceDesc` names them; the lookups of `/v1` do not use this.

import { type Cidr, type Ip, cidrContains, parseCidr } from "./ip";

const SPECIAL_RANGES: readonly (readonly [string, string])[] = [
  ["0.0.0.0/8", "This network"],
  ["10.0.0.0/8", "Private-Use"],
  ["100.64.0.0/10", "Shared Address Space"],
  ["127.0.0.0/8", "Loopback"],
  ["169.254.0.0/16", "Link Local"],
  ["172.16.0.0/12", "Private-Use"],
  ["192.0.0.0/24", "IETF Protocol Assignments"],
  ["192.0.2.0/24", "Documentation (TEST-NET-1)"],
  ["192.88.99.0/24", "6to4 Relay Anycast"],
  ["192.168.0.0/16", "Private-Use"],
  ["198.18.0.0/15", "Benchmarking"],
  ["198.51.100.0/24", "Documentation (TEST-NET-2)"],
  ["203.0.113.0/24", "Documentation (TEST-NET-3)"],
  ["224.0.0.0/4", "Multicast"],
  ["240.0.0.0/4", "Reserved"],
  ["255.255.255.255/32", "Limited Broadcast"],
  ["::/128", "Unspecified Address"],
  ["::1/128", "Loopback Address"],
  ["64:ff9b:1::/48", "IPv4-IPv6 Translation"],
  ["100::/64", "Discard-Only Address Block"],
  ["2001::/23", "IETF Protocol Assignments"],
  ["2001:db8::/32", "Documentation"],
  ["3fff::/20", "Documentation"],
  ["2002::/16", "6to4"],
  ["fc00::/7", "Unique-Local"],
  ["fe80::/10", "Link-Local Unicast"],
  ["ff00::/8", "Multicast"],
];

const RANGES: readonly { cidr: Cidr; name: string }[] = SPECIAL_RANGES.map(([text, name]) => ({ cidr: parseCidr(text), name }));

/** The special-purpose range holding `ip`, by name, or "Internet". */
export function addressSpaceOf(ip: Ip): string {
  for (const range of RANGES) if (cidrContains(range.cidr, ip)) return range.name;
  return "Internet";
}

/** False inside any special-purpose range (private, loopback, link-local, documentation, ...). */
export function isPublicAddress(ip: Ip): boolean {
  return addressSpaceOf(ip) === "Internet";
}
