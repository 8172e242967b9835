// GET /v1/ip/blocklist (contract 5.10 and 6) on crafted data made through real reports by several users, IPv4
// and IPv6: exact bodies of every format, minimum-risk semantics, category lists, families, the allowlist, the
// ETag (changes after a report, stays after lookups, 304 on If-None-Match), parameter errors, and a large list
// inserted directly into the index that streams complete and stays consistent while the index changes.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { formatIpv4, formatIpv6, ipv4FromNumber, parseIp } from "../../src/domain/ip";
import type { AddressRecord } from "../../src/index/reputation-index";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let u1: TestUser;
let u2: TestUser;
let u3: TestUser;
/** A free-tier account: its requests are counted and carry the X-RateLimit-* headers. */
let poller: TestUser;

const T0 = "2026-11-21T08:00:00.000Z";
const T1 = "2026-11-21T08:01:00.000Z";

const report = async (who: TestUser, ip: string, category: string, severity = 5) => {
  const res = await h.call("POST", "/v1/ip/report", { headers: who.jwt, json: { ipAddress: ip, category, description: "test", severity } });
  expect(res.status).toBe(201);
};
const list = (query = "", headers: Record<string, string> = {}) => h.call("GET", `/v1/ip/blocklist${query}`, { headers: { ...poller.apiKey, ...headers } });
const txt = async (query = "") => {
  const res = await list(`?format=txt${query}`);
  expect(res.status).toBe(200);
  return res.text();
};

beforeAll(async () => {
  h = await createHarness();
  [u1, u2, u3] = await Promise.all([addUser(h, { tier: "enterprise" }), addUser(h, { tier: "enterprise" }), addUser(h, { tier: "enterprise" })]);
  poller = await addUser(h, { tier: "free" });
  const admin = await addUser(h, { tier: "enterprise", role: "admin" });
  // Scores (5.7): one severity-5 report → 51 MEDIUM; two reporters → 26 HIGH; three → 14 CRITICAL;
  // one severity-1 report → 88 LOW. Different categories, so no group is community-verified.
  await report(u1, "10.0.0.1", "SPAM");
  await report(u2, "10.0.0.1", "PHISHING");
  await report(u3, "10.0.0.1", "MALWARE");
  await report(u1, "198.51.100.2", "SSH");
  await report(u2, "198.51.100.2", "brute-force");
  await report(u1, "198.51.100.3", "SSH");
  await report(u1, "203.0.113.9", "PORT_SCAN", 1);
  await report(u1, "2001:db8::5", "PORT_SCAN");
  await report(u2, "2001:DB8:0::5", "DDOS");
  await report(u3, "2001:db8::1:0", "SSH");
  await report(u1, "192.0.2.77", "SPAM");
  await report(u2, "192.0.2.77", "FRAUD");
  await report(u3, "192.0.2.77", "HACKING");
  await report(u1, "2001:db8:ffff::1", "SSH");
  await report(u2, "2001:db8:ffff::1", "SPAM");
  h.clock.set(T1);
  await report(u2, "198.51.100.10", "SSH");
  for (const cidr of ["192.0.2.0/24", "2001:db8:ffff::/48"]) {
    const res = await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr, note: "ours" } });
    expect(res.status).toBe(201);
  }
});
afterAll(() => h.close());

describe("the lists", () => {
  test("txt: IPv4 ascending then IPv6 ascending (numerically), one per line, ending with a newline", async () => {
    expect(await txt()).toBe("10.0.0.1\n198.51.100.2\n198.51.100.3\n198.51.100.10\n2001:db8::5\n2001:db8::1:0\n");
  });

  test.each([
    ["LOW", "10.0.0.1\n198.51.100.2\n198.51.100.3\n198.51.100.10\n203.0.113.9\n2001:db8::5\n2001:db8::1:0\n"],
    ["MEDIUM", "10.0.0.1\n198.51.100.2\n198.51.100.3\n198.51.100.10\n2001:db8::5\n2001:db8::1:0\n"],
    ["HIGH", "10.0.0.1\n198.51.100.2\n2001:db8::5\n"],
    ["critical", "10.0.0.1\n"],
  ])("riskLevel=%s is the minimum level", async (level, expected) => {
    expect(await txt(`&riskLevel=${level}`)).toBe(expected);
  });

  test.each([
    ["ssh", "198.51.100.2\n198.51.100.3\n198.51.100.10\n2001:db8::1:0\n"],
    ["brute-force", "198.51.100.2\n"],
    ["SPAM,port-scan", "10.0.0.1\n2001:db8::5\n"],
    ["SPAM,port-scan&riskLevel=LOW", "10.0.0.1\n203.0.113.9\n2001:db8::5\n"],
    ["ddos&ipVersion=6", "2001:db8::5\n"],
    ["iot", ""],
  ])("category=%s lists addresses with any of the categories", async (query, expected) => {
    expect(await txt(`&category=${query}`)).toBe(expected);
  });

  test("a repeated category parameter is one list; a repeated format is refused", async () => {
    expect(await txt("&category=ssh&category=spam&riskLevel=HIGH")).toBe("10.0.0.1\n198.51.100.2\n");
    const res = await list("?format=txt&format=csv");
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).details).toEqual([{ field: "format", message: "must be given once" }]);
  });

  test("X-Blocklist-Count gives the number of entries", async () => {
    expect((await list("?format=cidr")).headers.get("x-blocklist-count")).toBe("6");
    expect((await list("?format=txt&riskLevel=CRITICAL")).headers.get("x-blocklist-count")).toBe("1");
  });

  test.each([
    ["4", "10.0.0.1\n198.51.100.2\n198.51.100.3\n198.51.100.10\n"],
    ["6", "2001:db8::5\n2001:db8::1:0\n"],
    ["6&riskLevel=HIGH", "2001:db8::5\n"],
  ])("ipVersion=%s", async (query, expected) => {
    expect(await txt(`&ipVersion=${query}`)).toBe(expected);
  });

  test("cidr: the smallest cover (198.51.100.2 and .3 are one /31)", async () => {
    const res = await list("?format=cidr");
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe("10.0.0.1/32\n198.51.100.2/31\n198.51.100.10/32\n2001:db8::5/128\n2001:db8::1:0/128\n");
  });

  test("json (the default): envelope with generatedAt, count, filters and the addresses", async () => {
    const res = await list("?category=ssh,spam&riskLevel=high");
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const text = await res.text();
    expect(text).toBe(
      `{"success":true,"data":{"generatedAt":"${T1}","count":2,"filters":{"category":["SPAM","SSH"],"riskLevel":"HIGH","ipVersion":null},` +
        `"ips":["10.0.0.1","198.51.100.2"]}}`,
    );
    expect(await bodyOf(await list())).toEqual({
      success: true,
      data: {
        generatedAt: T1,
        count: 6,
        filters: { category: null, riskLevel: "MEDIUM", ipVersion: null },
        ips: ["10.0.0.1", "198.51.100.2", "198.51.100.3", "198.51.100.10", "2001:db8::5", "2001:db8::1:0"],
      },
    });
  });

  test("csv: header and one row per address with score, level, categories and lastSeen", async () => {
    const res = await list("?format=csv");
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(await res.text()).toBe(
      "ip,reputationScore,riskLevel,categories,lastSeen\n" +
        `10.0.0.1,14,CRITICAL,SPAM|PHISHING|MALWARE,${T0}\n` +
        `198.51.100.2,26,HIGH,BRUTE_FORCE|SSH,${T0}\n` +
        `198.51.100.3,51,MEDIUM,SSH,${T0}\n` +
        `198.51.100.10,51,MEDIUM,SSH,${T1}\n` +
        `2001:db8::5,26,HIGH,PORT_SCAN|DDOS,${T0}\n` +
        `2001:db8::1:0,51,MEDIUM,SSH,${T0}\n`,
    );
  });

  test("nft: the script for both sets", async () => {
    const res = await list("?format=nft&riskLevel=HIGH");
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe(
      "#!/usr/sbin/nft -f\n" +
        `# abuse-intel blocklist generated at ${T1}: 3 entries (riskLevel HIGH and above, all categories, IPv4 and IPv6)\n` +
        "# Load with `nft -f FILE`: one transaction empties and refills the sets; rules using them keep working.\n" +
        "add table inet abuse_intel\n" +
        "add set inet abuse_intel abuse_intel_v4 { type ipv4_addr; flags interval; }\n" +
        "flush set inet abuse_intel abuse_intel_v4\n" +
        "add set inet abuse_intel abuse_intel_v6 { type ipv6_addr; flags interval; }\n" +
        "flush set inet abuse_intel abuse_intel_v6\n" +
        "add element inet abuse_intel abuse_intel_v4 {\n\t10.0.0.1,\n\t198.51.100.2,\n}\n" +
        "add element inet abuse_intel abuse_intel_v6 {\n\t2001:db8::5,\n}\n",
    );
  });

  test("ipset: restore input that swaps the new list in", async () => {
    const res = await list("?format=ipset&riskLevel=HIGH&ipVersion=4");
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe(
      `# abuse-intel blocklist generated at ${T1}: 2 entries (riskLevel HIGH and above, all categories, IPv4 only)\n` +
        "# Load with `ipset restore -file FILE`: fills abuse_intel_v4_next, then swaps it with abuse_intel_v4 in one step.\n" +
        "create abuse_intel_v4 hash:net family inet hashsize 1024 maxelem 16777216 -exist\n" +
        "create abuse_intel_v4_next hash:net family inet hashsize 1024 maxelem 16777216 -exist\n" +
        "flush abuse_intel_v4_next\n" +
        "add abuse_intel_v4_next 10.0.0.1\n" +
        "add abuse_intel_v4_next 198.51.100.2\n" +
        "swap abuse_intel_v4_next abuse_intel_v4\n" +
        "destroy abuse_intel_v4_next\n",
    );
  });

  test("allowlisted addresses never appear, in any format or at any level; the lookup still shows them", async () => {
    for (const format of ["json", "txt", "cidr", "nft", "ipset", "csv"]) {
      const body = await (await list(`?format=${format}&riskLevel=LOW`)).text();
      expect(body).not.toContain("192.0.2.");
      expect(body).not.toContain("2001:db8:ffff");
    }
    const detail = await bodyOf(await h.call("GET", "/v1/ip/192.0.2.77", { headers: poller.apiKey }));
    expect(detail).toMatchObject({ threatLevel: "critical", isAllowlisted: true });
  });

  test("needs a credential", async () => {
    const res = await h.call("GET", "/v1/ip/blocklist");
    expect(res.status).toBe(401);
  });

  test.each([
    ["?format=xml", "format", "json, txt, cidr, nft, ipset, csv"],
    ["?riskLevel=SEVERE", "riskLevel", "LOW, MEDIUM, HIGH, CRITICAL"],
    ["?ipVersion=5", "ipVersion", "4, 6"],
    ["?category=ssh,nope", "category", "SPAM, BRUTE_FORCE, PORT_SCAN"],
  ])("%s is 400 validation_failed naming the allowed values", async (query, field, allowed) => {
    const res = await list(query);
    expect(res.status).toBe(400);
    const body = await bodyOf(res);
    expect(body.code).toBe("validation_failed");
    expect(body.details).toHaveLength(1);
    expect(body.details[0].field).toBe(field);
    expect(body.details[0].message).toContain(allowed);
    expect(body.error).toContain(allowed);
  });
});

describe("ETag and 304", () => {
  test("a strong ETag; If-None-Match with it gives 304 with no body, still counted with rate-limit headers", async () => {
    const first = await list("?format=txt");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect(first.headers.get("x-ratelimit-limit")).toBe("1000");
    const again = await list("?format=txt");
    expect(again.headers.get("etag")).toBe(etag);
    expect(await again.text()).toBe(await first.text());

    const remaining = Number(again.headers.get("x-ratelimit-remaining"));
    const cached = await list("?format=txt", { "if-none-match": etag });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe("");
    expect(cached.headers.get("etag")).toBe(etag);
    expect(cached.headers.get("x-ratelimit-limit")).toBe("1000");
    expect(Number(cached.headers.get("x-ratelimit-remaining"))).toBe(remaining - 1);

    for (const value of [`W/${etag}`, `"something-else", ${etag}`, "*"]) {
      expect((await list("?format=txt", { "if-none-match": value })).status).toBe(304);
    }
    expect((await list("?format=txt", { "if-none-match": '"something-else"' })).status).toBe(200);
  });

  test("one ETag per list and format; the same list asked in other words has the same one", async () => {
    const etagOf = async (query: string) => (await list(query)).headers.get("etag");
    const tags = await Promise.all(["?format=txt", "?format=csv", "?format=txt&riskLevel=HIGH", "?format=txt&ipVersion=4", "?format=txt&category=ssh"].map(etagOf));
    expect(new Set(tags).size).toBe(tags.length);
    expect(await etagOf("?format=txt&category=ssh,spam&riskLevel=high")).toBe(await etagOf("?format=TXT&category=SPAM,SSH,ssh&riskLevel=HIGH"));
    expect(await etagOf("")).toBe(await etagOf("?format=json&riskLevel=MEDIUM"));
  });

  test("lookups leave the ETag alone; a report changes it, and the body with its generatedAt follows", async () => {
    const before = await list();
    const etag = before.headers.get("etag")!;
    const body = await before.text();
    h.clock.advance(5 * 60_000);
    await h.call("GET", "/v1/ip/10.0.0.1", { headers: poller.apiKey });
    await h.call("GET", "/v1/ip/10.0.0.1/reputation", { headers: poller.apiKey });
    await h.call("POST", "/v1/ip/bulk", { headers: poller.apiKey, json: { ips: ["10.0.0.1", "2001:db8::5"] } });
    await h.call("GET", "/v1/ip/recent", { headers: poller.apiKey });
    const unchanged = await list();
    expect(unchanged.headers.get("etag")).toBe(etag);
    // A strong ETag promises the same bytes: generatedAt is when the list's state was first seen.
    expect(await unchanged.text()).toBe(body);
    expect((await list("", { "if-none-match": etag })).status).toBe(304);

    await report(u3, "198.51.100.3", "PORT_SCAN");
    const after = await list("", { "if-none-match": etag });
    expect(after.status).toBe(200);
    expect(after.headers.get("etag")).not.toBe(etag);
    const data = (await bodyOf(after)).data;
    expect(data.generatedAt).toBe(new Date(h.clock.now()).toISOString());
    expect(data.generatedAt).not.toBe(T1);
    expect(data.ips).toEqual(["10.0.0.1", "198.51.100.2", "198.51.100.3", "198.51.100.10", "2001:db8::5", "2001:db8::1:0"]);
  });

  test("an allowlist change changes the ETag and the list", async () => {
    const etag = (await list("?format=txt&riskLevel=CRITICAL")).headers.get("etag")!;
    expect(h.services.allowlist.remove("192.0.2.0/24")).toBe(true);
    const res = await list("?format=txt&riskLevel=CRITICAL", { "if-none-match": etag });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("10.0.0.1\n192.0.2.77\n");
    h.services.allowlist.add("192.0.2.0/24", "back", null);
    expect(await txt("&riskLevel=CRITICAL")).toBe("10.0.0.1\n");
  });
});

// ---------------------------------------------------------------------------------------------------------
// A large list, inserted directly through the services

describe("a large list streams", () => {
  let big: Harness;
  let user: TestUser;
  const v4 = new Set<number>();
  const v6: Uint32Array[] = [];
  const record = (score: number): AddressRecord => ({
    reputationScore: score,
    totalReports: 1,
    verifiedReports: 0,
    categoriesMask: 1,
    lastCategoryBit: 0,
    firstSeenMs: big.clock.now(),
    lastSeenMs: big.clock.now(),
  });

  beforeAll(async () => {
    big = await createHarness();
    user = await addUser(big, { tier: "enterprise" });
    // 50,000 of the 65,536 addresses of 10.20.0.0/16 (dense, so aggregation has work), random order, and
    // 5,000 IPv6 addresses.
    let seed = 12345;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    while (v4.size < 50_000) v4.add(0x0a140000 + (next() >>> 16));
    for (const value of v4) big.services.index.upsert(ipv4FromNumber(value), record(30));
    for (let i = 0; i < 5_000; i++) {
      const words = Uint32Array.of(0x20010db8, next(), next(), next());
      v6.push(words);
      big.services.index.upsert(parseIp(formatIpv6(words)), record(40));
    }
  });
  afterAll(() => big.close());

  const get = (query: string) => big.call("GET", `/v1/ip/blocklist${query}`, { headers: user.apiKey });
  const compareWords = (a: Uint32Array, b: Uint32Array) => {
    for (let i = 0; i < 4; i++) if (a[i] !== b[i]) return a[i] - b[i];
    return 0;
  };
  const expectedTxt = () =>
    [...v4].sort((a, b) => a - b).map((v) => `${formatIpv4(v)}\n`).join("") +
    [...v6].sort(compareWords).map((w) => `${formatIpv6(w)}\n`).join("");

  async function readChunks(res: Response): Promise<Uint8Array[]> {
    const chunks: Uint8Array[] = [];
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return chunks;
      chunks.push(value);
    }
  }

  test("txt arrives complete, streamed (chunked, no Content-Length)", async () => {
    const res = await get("?format=txt");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBeNull();
    expect(res.headers.get("transfer-encoding")).toBe("chunked");
    const chunks = await readChunks(res);
    expect(Buffer.concat(chunks).toString("latin1")).toBe(expectedTxt());
  });

  test("json's count is right while streaming", async () => {
    const body = await bodyOf(await get(""));
    expect(body.data.count).toBe(55_000);
    expect(body.data.ips).toHaveLength(55_000);
  });

  test("cidr equals the brute-force smallest cover of the addresses", async () => {
    // Merge sibling blocks bottom-up over the /16: what remains is the set of maximal aligned blocks.
    let level = new Set([...v4].map((v) => v - 0x0a140000));
    const blocks: Array<[number, number]> = [];
    for (let bits = 0; bits <= 16; bits++) {
      const merged = new Set<number>();
      for (const o of level) {
        const sibling = o ^ (2 ** bits);
        if (bits < 16 && level.has(sibling)) merged.add(Math.min(o, sibling));
        else blocks.push([o, bits]);
      }
      level = merged;
    }
    blocks.sort((a, b) => a[0] - b[0]);
    const expected4 = blocks.map(([o, bits]) => `${formatIpv4(0x0a140000 + o)}/${32 - bits}\n`).join("");
    const expected6 = [...v6].sort(compareWords).map((w) => `${formatIpv6(w)}/128\n`).join("");
    expect(await (await get("?format=cidr")).text()).toBe(expected4 + expected6);
  });

  test("the index changing while the stream is pulled does not change the body being sent", async () => {
    const res = await get("?format=txt");
    const before = expectedTxt();
    const reader = res.body!.getReader();
    const first = await reader.read();
    // Reports arrive: addresses are removed, changed and added while the client is still reading.
    const removed = [...v4].slice(0, 1000);
    for (const value of removed) big.services.index.remove(ipv4FromNumber(value));
    for (let i = 0; i < 1000; i++) big.services.index.upsert(ipv4FromNumber(0x0b000000 + i), record(10));
    const chunks = [first.value!];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    expect(Buffer.concat(chunks).toString("latin1")).toBe(before);
    // The next request sees the new list.
    for (const value of removed) v4.delete(value);
    for (let i = 0; i < 1000; i++) v4.add(0x0b000000 + i);
    expect(await (await get("?format=txt")).text()).toBe(expectedTxt());
  });
});

describe("retention", () => {
  test("reports past retention stop counting at once: the list empties and the ETag changes", async () => {
    const etag = (await list("?format=txt")).headers.get("etag")!;
    h.clock.advance(366 * 24 * 3600_000);
    const res = await list("?format=txt", { "if-none-match": etag });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).not.toBe(etag);
    expect(await res.text()).toBe("");
  });
});
