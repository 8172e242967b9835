// The `ipset restore` lines of a firewall sync (contract 19): the list goes into a staging set of the same type
// (`SET.next`, hash:net), and only once it is whole are the staging sets swapped with the live ones and
// destroyed, so a rule matching `--match-set SET src` goes from the old list to the new one in one step.

import type { IpVersion } from "../ip";
import { IPSET_STAGING_SUFFIX } from "./sync-target";

export type IpsetNames = Readonly<Record<IpVersion, string>>;

const FAMILY: Record<IpVersion, string> = { 4: "inet", 6: "inet6" };
/** The appliance's own parameters (formats.ts): a hash that grows as needed up to 16 M entries. */
const PARAMETERS = "hashsize 1024 maxelem 16777216";

export const stagingName = (live: string): string => `${live}${IPSET_STAGING_SUFFIX}`;

/** `ipset create` arguments of a live set, for when it is missing. */
export function liveSetCreateArgs(names: IpsetNames, version: IpVersion): string[] {
  return ["create", names[version], "hash:net", "family", FAMILY[version], ...PARAMETERS.split(" ")];
}

/** Creates (or empties) both staging sets. */
export function ipsetStagingLines(names: IpsetNames): string {
  let out = "";
  for (const v of [4, 6] as const) {
    const staging = stagingName(names[v]);
    out += `create ${staging} hash:net family ${FAMILY[v]} ${PARAMETERS} -exist\nflush ${staging}\n`;
  }
  return out;
}

/** What begins an entry's line: `add SET.next `. */
export function ipsetAddPrefix(names: IpsetNames, version: IpVersion): string {
  return `add ${stagingName(names[version])} `;
}

/** Swaps both staging sets in, then destroys them (they hold the old lists after the swap). */
export function ipsetSwapLines(names: IpsetNames): string {
  let out = "";
  for (const v of [4, 6] as const) out += `swap ${stagingName(names[v])} ${names[v]}\n`;
  for (const v of [4, 6] as const) out += `destroy ${stagingName(names[v])}\n`;
  return out;
}
