import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { feedLineEntry, parseFeedList, parseFeedListInSteps } from "../../../src/domain/feed-list";
import { Pace } from "../../../src/domain/pace";

const fixture = (name: string) => readFileSync(join(import.meta.dir, "fixtures/feeds", name), "utf8");
const texts = (name: string) => parseFeedList(fixture(name)).entries.map((c) => c.text);

describe("the publishers' real formats", () => {
  test("FireHOL netset: # comments, networks and single addresses", () => {
    const list = parseFeedList(fixture("firehol_level1.netset"));
    expect(list.entries.map((c) => c.text)).toEqual(["1.10.16.0/20", "1.19.0.0/16", "5.188.10.179/32", "31.184.198.71/32", "185.156.72.0/24", "198.51.100.0/24"]);
    expect(list.errors).toEqual([]);
    expect(list.lines).toBe(38);
  });

  test("Spamhaus DROP: CIDR ; SBL id, ; comments", () => {
    expect(texts("drop.txt")).toEqual(["1.10.16.0/20", "1.19.0.0/16", "1.32.128.0/18", "2.56.192.0/22"]);
  });

  test("Spamhaus DROPv6", () => {
    const list = parseFeedList(fixture("dropv6.txt"));
    expect(list.entries.map((c) => [c.text, c.version, c.prefixLength])).toEqual([
      ["2001:678:738::/48", 6, 48],
      ["2a06:e480::/29", 6, 29],
      ["2a0d:3dc0::/29", 6, 29],
    ]);
    expect(list.errors).toEqual([]);
  });

  test("Spamhaus DROP JSON: one object a line, the metadata line skipped", () => {
    const list = parseFeedList(fixture("drop_v4.json"));
    expect(list.entries.map((c) => c.text)).toEqual(["1.10.16.0/20", "1.19.0.0/16", "2.56.192.0/22"]);
    expect(list.errors).toEqual([]);
  });

  test("blocklist.de: one address a line, IPv4 and IPv6", () => {
    expect(texts("blocklist_de_all.txt")).toEqual(["1.2.3.4/32", "5.188.10.179/32", "31.184.198.71/32", "2001:db8::1/128", "45.148.10.81/32"]);
  });
});

describe("bad lines", () => {
  test("are listed with their line numbers and skipped; duplicates and CRLF endings are taken once", () => {
    const list = parseFeedList(fixture("bad.txt"));
    expect(list.entries.map((c) => c.text)).toEqual(["10.0.0.1/32"]);
    expect(list.errors.map((e) => [e.line, e.input])).toEqual([
      [3, "not-an-ip"],
      [4, "10.1.2.3/24"],
      [5, "999.1.1.1"],
      [6, "2001:db8::/129"],
    ]);
    expect(list.badLines).toBe(4);
    expect(list.errors[1].error).toContain("did you mean 10.1.2.0/24");
  });

  test("a CIDR with host bits set is refused, never widened", () => {
    expect(feedLineEntry("192.0.2.77/24")).toBeString();
  });

  test("comments after an entry, inline and trailing", () => {
    expect(feedLineEntry("192.0.2.0/24 # scanners")).toMatchObject({ text: "192.0.2.0/24" });
    expect(feedLineEntry("192.0.2.1\tsome note")).toMatchObject({ text: "192.0.2.1/32" });
    expect(feedLineEntry("   ")).toBeNull();
    expect(feedLineEntry("; comment")).toBeNull();
    expect(feedLineEntry("{not json")).toBeString();
  });

  test("an IPv4-mapped IPv6 entry is the IPv4 entry", () => {
    expect(feedLineEntry("::ffff:192.0.2.1")).toMatchObject({ text: "192.0.2.1/32", version: 4 });
  });

  test("a range is refused, not read as its first address; nor is a line that lists everything", () => {
    for (const line of ["1.2.3.4 - 1.2.3.9", "1.2.3.4-1.2.3.9", "1.2.3.0	1.2.3.255	24", "2001:db8::1 2001:db8::9"]) {
      expect(feedLineEntry(line)).toBeString();
    }
    // An IPv6 bogon list's IPv4-mapped space reads as 0.0.0.0/0: it would block all of IPv4.
    expect(feedLineEntry("::ffff:0:0/96")).toContain("the whole address space");
    expect(feedLineEntry("0.0.0.0/0")).toBeString();
    expect(feedLineEntry("::/0")).toBeString();
    // A comment after whitespace is still one.
    expect(feedLineEntry("192.0.2.1 scanner 3")).toMatchObject({ text: "192.0.2.1/32" });
    expect(feedLineEntry("0.0.0.0/8 # this network")).toMatchObject({ text: "0.0.0.0/8" });
  });

  test("only the first 1,000 bad lines are kept, all are counted", () => {
    const list = parseFeedList("x\n".repeat(1500) + "192.0.2.1\n");
    expect(list.errors.length).toBe(1000);
    expect(list.badLines).toBe(1500);
    expect(list.entries.length).toBe(1);
  });

  test("progress is reported every N lines", () => {
    const seen: number[] = [];
    parseFeedList("192.0.2.1\n".repeat(25), (n) => seen.push(n), 10);
    expect(seen).toEqual([10, 20]);
  });
});

describe("a list read in steps (issue 29: a server's refresh yields between them)", () => {
  test("yields after every step of lines and reads what the parse at once does", () => {
    const text = fixture("firehol_level1.netset");
    const steps = parseFeedListInSteps(text, new Pace(5));
    let yields = 0;
    let next = steps.next();
    for (; !next.done; next = steps.next()) yields++;
    expect(yields).toBe(Math.floor(38 / 5));
    expect(next.value).toEqual(parseFeedList(text));
  });
});
