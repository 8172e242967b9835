// IP addresses as the contract (section 2) defines them: parse at the edge, pass typed values inward.
// PLACEHOLDER: the types below are fixed; the functions are being implemented (issue 3).

export type IpVersion = 4 | 6;

declare const normalizedBrand: unique symbol;
/** An address in its one normalized text form (dotted quad, or RFC 5952 IPv6). */
export type NormalizedIp = string & { readonly [normalizedBrand]: true };

export interface Ipv4 {
  readonly version: 4;
  /** The address as an unsigned 32-bit integer. */
  readonly value: number;
  readonly text: NormalizedIp;
}

export interface Ipv6 {
  readonly version: 6;
  /** Four unsigned 32-bit words, most significant first. */
  readonly words: Uint32Array;
  readonly text: NormalizedIp;
}

export type Ip = Ipv4 | Ipv6;

export interface Cidr {
  readonly version: IpVersion;
  /** The network address (host bits zero). */
  readonly network: Ip;
  readonly prefixLength: number;
  /** Normalized `network/prefixLength`. */
  readonly text: string;
}

/** Parses one address; returns the reason as a string when it is not one. */
export function tryParseIp(_input: string): Ip | string {
  throw new Error("not implemented");
}

/** Parses one address or throws AppError bad_request with the reason. */
export function parseIp(_input: string): Ip {
  throw new Error("not implemented");
}

/** Parses `addr/len` (or a bare address as a /32 or /128). Host bits set is an error. */
export function tryParseCidr(_input: string): Cidr | string {
  throw new Error("not implemented");
}

/** Why an address may not be reported (contract section 2), or null when it may. */
export function unreportableReason(_ip: Ip): string | null {
  throw new Error("not implemented");
}
