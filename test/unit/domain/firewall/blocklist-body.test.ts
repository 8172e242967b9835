// The firewall sync's reader of the appliance's nft and ipset bodies: fed lists rendered by the real formats, it
// gives back every entry with its family whatever the chunking, and refuses every cut of the body (at each byte),
// an empty body, an HTML page, an entry that is not an address, and a body whose count disagrees with its header.

import { describe, expect, test } from "bun:test";
import { type BlocklistEntry, arrayCursor, renderToString } from "../../../../src/domain/blocklist/formats";
import { blocklistFilters } from "../../../../src/domain/blocklist/query";
import { BlocklistBodyReader, type PulledFormat } from "../../../../src/domain/firewall/blocklist-body";
import { formatIpv4, type Ipv6, parseCidr } from "../../../../src/domain/ip";

const entry = (text: string): BlocklistEntry => {
  const c = parseCidr(text);
  return c.network.version === 4
    ? { version: 4, v4: (c.network as { value: number }).value, prefixLength: c.prefixLength }
    : { version: 6, v6: (c.network as Ipv6).words, prefixLength: c.prefixLength };
};
const LISTED = ["192.0.2.1", "198.51.100.0/24", "203.0.113.9", "2001:db8::1", "2001:db8:1::/48"];

function render(format: PulledFormat, entries = LISTED): string {
  return renderToString(format, { generatedAtMs: Date.parse("2026-11-29T08:00:00Z"), count: entries.length, filters: blocklistFilters() }, arrayCursor(entries.map(entry)));
}

/** Reads `body` in pieces of `step` bytes: the entries, or the reason it was refused. */
function read(format: PulledFormat, body: string | Uint8Array, step = 7): { entries: string[]; count: number } | string {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const entries: string[] = [];
  const reader = new BlocklistBodyReader(format, {
    ipv4: (value, prefixLength) => entries.push(`4 ${formatIpv4(value)}${prefixLength === 32 ? "" : `/${prefixLength}`}`),
    ipv6: (text) => entries.push(`6 ${text}`),
  });
  try {
    for (let i = 0; i < bytes.length; i += step) reader.push(bytes.subarray(i, i + step));
    return { entries, count: reader.end() };
  } catch (error) {
    return (error as Error).message;
  }
}

describe.each(["nft", "ipset"] as const)("the %s format", (format) => {
  test("a whole list gives every entry with its family, whatever the chunking", () => {
    const body = render(format);
    const expected = { entries: ["4 192.0.2.1", "4 198.51.100.0/24", "4 203.0.113.9", "6 2001:db8::1", "6 2001:db8:1::/48"], count: 5 };
    for (const step of [1, 2, 3, 64, 100_000]) expect(read(format, body, step)).toEqual(expected);
  });

  test("an empty list, and a list of one family, are complete lists", () => {
    expect(read(format, render(format, []))).toEqual({ entries: [], count: 0 });
    expect(read(format, render(format, ["2001:db8::1"]))).toEqual({ entries: ["6 2001:db8::1"], count: 1 });
  });

  test("every cut of the body, at every byte, is refused", () => {
    const body = new TextEncoder().encode(render(format));
    for (let cut = 0; cut < body.length; cut++) {
      const result = read(format, body.subarray(0, cut));
      expect({ cut, refused: typeof result === "string" }).toEqual({ cut, refused: true });
    }
  });

  test("an HTML page, an empty body, a count that disagrees, a hostile entry are refused with the reason", () => {
    expect(read(format, "")).toBe("the body is empty");
    expect(read(format, "<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n")).toContain(`not an ${format} blocklist`);
    const body = render(format);
    expect(read(format, body.replace(": 5 entries", ": 6 entries"))).toContain("announces 6 entries, the body holds 5");
    const hostile = format === "nft" ? body.replace("\t203.0.113.9,", "\t203.0.113.9 } ; flush ruleset ; add element inet x y { 1.1.1.1,") : body.replace("add abuse_intel_v4_next 203.0.113.9", "add abuse_intel_v4_next 203.0.113.9 -exist\nflush decoy");
    expect(read(format, hostile)).toMatch(/holds no IPv4 address|not part of/);
    for (const bad of ["256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4/33", "1.2.3.4/24", "1.2.3.4/", "1.2.3.4/08", "1.2.3.4 ", "1.2.3.4.5"]) {
      const line = format === "nft" ? `\t${bad},` : `add abuse_intel_v4_next ${bad}`;
      const swapped = body.replace(format === "nft" ? "\t203.0.113.9," : "add abuse_intel_v4_next 203.0.113.9", line);
      expect({ bad, result: read(format, swapped) }).toEqual({ bad, result: expect.stringContaining("holds no IPv4 address") });
    }
    const v6 = body.replace(format === "nft" ? "\t2001:db8::1," : "add abuse_intel_v6_next 2001:db8::1", format === "nft" ? "\t2001:db8::1 },{ 1.2.3.4," : "add abuse_intel_v6_next 2001:db8::1 -exist");
    expect(read(format, v6)).toContain("holds no IPv6 address");
  });
});

test("the other format's body is refused", () => {
  expect(read("nft", render("ipset"))).toContain("not part of an nft blocklist");
  expect(read("ipset", render("nft"))).toContain("not an ipset blocklist");
});
