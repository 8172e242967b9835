// Data for the DNS blocklist benchmark (issue 26): N listed IPv4 addresses and N never-reported ones (public-looking,
// the same every run), written as the plain list `abuse-intel import blocklist` takes, as rbldnsd ip4set data files
// answering what the appliance answers for them, and as a dnsperf query file alternating listed and never-reported.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatIpv4 } from "../../../src/domain/ip";
import { ipv4Name } from "../../support/dns";
import { rng } from "../../support/random";

export interface DnsblData {
  listed: string[];
  unlisted: string[];
  /** One address a line, for `abuse-intel import blocklist`. */
  blocklistFile: string;
  /** `d.c.b.a.ZONE A`, listed and never-reported alternating. */
  queryFile: string;
  /** rbldnsd's zone specifications (`ZONE:ip4set:FILE` ...), files relative to `dir`. */
  rbldnsdZones: string[];
}

/** Addresses outside 0/8, 10/8, 127/8 and 224/3, as unsigned 32-bit numbers, none twice and none in `taken`. */
function publicIpv4(count: number, seed: number, taken: Set<number>): number[] {
  const next = rng(seed);
  const out: number[] = [];
  while (out.length < count) {
    const value = next();
    const first = value >>> 24;
    if (first === 0 || first === 10 || first === 127 || first >= 224 || taken.has(value)) continue;
    taken.add(value);
    out.push(value);
  }
  return out;
}

/**
 * Writes the files into `dir`. `answers` are the A records the appliance gives a listed address of the imported
 * category at its level (127.0.0.2, 127.0.1.N, 127.0.2.L): rbldnsd gets one ip4set per record, so both servers
 * send the same answers.
 */
export function prepareDnsblData(dir: string, count: number, zone: string, answers: string[]): DnsblData {
  const taken = new Set<number>();
  const listed = publicIpv4(count, 0x5eed_d115, taken).map(formatIpv4);
  const unlisted = publicIpv4(count, 0x0dd_ba11, taken).map(formatIpv4);
  const blocklistFile = join(dir, "listed.txt");
  writeFileSync(blocklistFile, listed.join("\n") + "\n");
  const rbldnsdZones: string[] = [];
  answers.forEach((answer, i) => {
    const file = `answer-${i}.ip4set`;
    writeFileSync(join(dir, file), `:${answer}:\n${listed.join("\n")}\n`);
    rbldnsdZones.push(`${zone}:ip4set:${file}`);
  });
  writeFileSync(join(dir, "soa.generic"), `$SOA 300 ns.${zone}. hostmaster.${zone}. 1 3600 600 86400 300\n$NS 300 ns.${zone}.\n`);
  rbldnsdZones.push(`${zone}:generic:soa.generic`);
  const queryFile = join(dir, "queries.txt");
  const lines: string[] = [];
  for (let i = 0; i < count; i++) lines.push(`${ipv4Name(listed[i]!, zone)} A`, `${ipv4Name(unlisted[i]!, zone)} A`);
  writeFileSync(queryFile, lines.join("\n") + "\n");
  return { listed, unlisted, blocklistFile, queryFile, rbldnsdZones };
}
