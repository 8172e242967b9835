// Which kernel sets `abuse-intel firewall sync` keeps (contract 19): `--nft TABLE/SET` (table inet TABLE, interval
// sets SET and SET6) or `--ipset SET` (hash:net sets SET and SET6), parsed from the option into typed names.

import type { IpVersion } from "../ip";

export type SyncTarget =
  | { kind: "nft"; table: string; sets: Readonly<Record<IpVersion, string>> }
  | { kind: "ipset"; sets: Readonly<Record<IpVersion, string>> };

// nft identifiers: a letter, then letters, digits and `_` (a subset of what nft's scanner takes, with nothing that
// needs quoting). ipset names: at most 31 bytes; the staging twin adds `.next` to SET6, so SET is at most 25.
const NFT_NAME = /^[A-Za-z][A-Za-z0-9_]{0,62}$/;
const IPSET_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,24}$/;
export const IPSET_STAGING_SUFFIX = ".next";

/** `TABLE/SET` for --nft; a reason string when it is not one. */
export function parseNftTarget(raw: string): SyncTarget | string {
  const parts = raw.split("/");
  if (parts.length !== 2 || !NFT_NAME.test(parts[0]) || !NFT_NAME.test(parts[1])) {
    return `must be TABLE/SET, each a letter then letters, digits or _ (at most 63), got "${raw}"`;
  }
  const [table, set] = parts;
  return { kind: "nft", table, sets: { 4: set, 6: `${set}6` } };
}

/** `SET` for --ipset; a reason string when it is not one. */
export function parseIpsetTarget(raw: string): SyncTarget | string {
  if (!IPSET_NAME.test(raw)) return `must be a set name: a letter then letters, digits, _ or - (at most 25), got "${raw}"`;
  return { kind: "ipset", sets: { 4: raw, 6: `${raw}6` } };
}

/** How the log names the sets: `inet fw blocklist/blocklist6` or `ipset blocklist/blocklist6`. */
export function describeTarget(target: SyncTarget): string {
  return target.kind === "nft" ? `nft inet ${target.table} ${target.sets[4]}/${target.sets[6]}` : `ipset ${target.sets[4]}/${target.sets[6]}`;
}
