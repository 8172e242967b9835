// Feeds and listed networks over HTTP (contract 12): lists in the publishers' formats imported under a feed's
// name, networks in the detail record, the score and every blocklist format, replace semantics, and scheduled
// feeds refreshed from a test HTTP server on 127.0.0.1 (ETag and 304, a 500 keeps the entries) and from a file.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { turnsTaken } from "../support/event-loop-watch";
import { PARSE_STEP_LINES } from "../../src/domain/feed-list";
import { STEP_ENTRIES } from "../../src/services/feeds/feed-change";

const fixture = (name: string) => readFileSync(join(import.meta.dir, "../unit/domain/fixtures/feeds", name), "utf8");

let h: Harness;
let admin: TestUser;
let user: TestUser;

const importList = (name: string, text: string, query: string, headers: Record<string, string> = admin.jwt) =>
  h.call("POST", `/v1/admin/feeds/${name}?${query}`, { headers: { ...headers, "content-type": "text/plain" }, body: text });
const detail = async (ip: string) => (await bodyOf(await h.call("GET", `/v1/ip/${ip}`, { headers: user.apiKey }))) as Record<string, unknown>;
const reputation = async (ip: string) => ((await bodyOf(await h.call("GET", `/v1/ip/${ip}/reputation`, { headers: user.apiKey }))) as { data: Record<string, unknown> }).data;
const blocklist = async (query: string) => {
  const res = await h.call("GET", `/v1/ip/blocklist?${query}`, { headers: user.apiKey });
  expect(res.status).toBe(200);
  return { body: await res.text(), etag: res.headers.get("etag") };
};

beforeAll(async () => {
  h = await createHarness();
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
  user = await addUser(h, { tier: "enterprise" });
});
afterAll(() => h.close());

describe("one-off imports (POST /v1/admin/feeds/{name})", () => {
  test("a list from anyone but an administrator is refused before its body is read", async () => {
    // 48 MiB offered slowly: read before the credential was looked at, it was all uploaded before the 401.
    const offered = (pulled: { mib: number }) =>
      new ReadableStream<Uint8Array>({
        async pull(c) {
          if (pulled.mib >= 48) return c.close();
          await Bun.sleep(10);
          pulled.mib++;
          c.enqueue(new Uint8Array(1 << 20).fill(0x31));
        },
      });
    for (const [headers, status] of [[{}, 401], [user.apiKey, 401], [user.jwt, 403]] as const) {
      const pulled = { mib: 0 };
      const res = await fetch(`${h.url}/v1/admin/feeds/big?category=SSH`, { method: "POST", headers: { ...headers, "content-type": "text/plain" }, body: offered(pulled), duplex: "half" } as RequestInit);
      expect(res.status).toBe(status);
      expect(pulled.mib).toBeLessThan(8);
    }
    expect((await h.call("GET", "/v1/admin/feeds/big", { headers: admin.jwt })).status).toBe(404);
  });

  test("Spamhaus DROP and DROPv6: networks counted, listed with their source, scored like a verified report", async () => {
    const res = await importList("spamhaus-drop", fixture("drop.txt") + fixture("dropv6.txt"), "category=SPAM&severity=4");
    expect(res.status).toBe(200);
    expect(((await bodyOf(res)) as { data: unknown }).data).toEqual({ feed: "spamhaus-drop", imported: 7, entries: 7, lines: 15, badLines: 0, errors: [], rescored: 0 });

    // Severity 4, verified: 0.8 × 2 = 1.6, capped at 1.5 per reporter → round(100 × e^-1) = 37, HIGH.
    const inside = await detail("1.10.17.200");
    expect(inside).toMatchObject({ reports: 1, verifiedReports: 1, reputationScore: 37, abuse_confidence: 63, threatLevel: "high", categories: ["SPAM"], firstSeen: null });
    expect(inside.networks).toEqual([{ cidr: "1.10.16.0/20", source: "spamhaus-drop", category: "SPAM" }]);
    expect(inside.lastSeen).toBeString();
    const v6 = await detail("2001:678:738:1::5");
    expect(v6.networks).toEqual([{ cidr: "2001:678:738::/48", source: "spamhaus-drop", category: "SPAM" }]);
    expect(v6.reputationScore).toBe(37);
    expect(await detail("1.10.32.1")).toMatchObject({ reports: 0, reputationScore: 100, networks: [] });
  });

  test("the reputation answer of an address inside a network: computed, then cached until the network changes", async () => {
    const first = await reputation("1.19.5.5");
    expect(first).toMatchObject({ reputationScore: 37, riskLevel: "HIGH", totalReports: 1, verifiedReports: 1, categories: ["SPAM"], cached: false });
    expect((await reputation("1.19.5.5")).cached).toBe(true);
    await importList("extra", "1.19.5.0/24\n", "category=PORT_SCAN&severity=2");
    const after = await reputation("1.19.5.5");
    expect(after.cached).toBe(false);
    // Two feeds around it: 1.5 + 0.4 × 2 = 2.3 → round(100 × e^(-2.3/1.5)) = 22, HIGH.
    expect(after).toMatchObject({ reputationScore: 22, totalReports: 2, categories: ["SPAM", "PORT_SCAN"] });
    expect((await detail("1.19.5.5")).networks).toEqual([
      { cidr: "1.19.0.0/16", source: "spamhaus-drop", category: "SPAM" },
      { cidr: "1.19.5.0/24", source: "extra", category: "PORT_SCAN" },
    ]);
  });

  test("a reported address inside a network: its reports and the listing count together", async () => {
    const res = await h.call("POST", "/v1/ip/report", { headers: user.jwt, json: { ipAddress: "1.32.128.9", category: "SSH", description: "x", severity: 3 } });
    expect(res.status).toBe(201);
    // 1.5 (listing) + 0.6 (one pending severity-3 report) = 2.1 → round(100 × e^-1.4) = 25.
    expect(await detail("1.32.128.9")).toMatchObject({ reports: 2, verifiedReports: 1, reputationScore: 25, categories: ["SPAM", "SSH"] });
  });

  test("blocklist.de: single addresses, IPv4 and IPv6, on the list by themselves", async () => {
    const res = await importList("blocklist-de", fixture("blocklist_de_all.txt"), "category=BRUTE_FORCE&severity=3");
    expect(((await bodyOf(res)) as { data: { entries: number } }).data.entries).toBe(5);
    // Severity 3, verified: 1.2 → round(100 × e^-0.8) = 45, HIGH.
    expect(await detail("45.148.10.81")).toMatchObject({ reports: 1, reputationScore: 45, threatLevel: "high", networks: [{ cidr: "45.148.10.81/32", source: "blocklist-de", category: "BRUTE_FORCE" }] });
    expect(await detail("2001:db8::1")).toMatchObject({ reputationScore: 45 });
  });

  test("every blocklist format lists a network as one line and leaves out the addresses it covers", async () => {
    const txt = (await blocklist("format=txt&riskLevel=HIGH")).body;
    const lines = txt.trimEnd().split("\n");
    expect(lines).toContain("1.10.16.0/20");
    expect(lines).toContain("2001:678:738::/48");
    expect(lines).toContain("45.148.10.81");
    // 1.32.128.9 was reported, but 1.32.128.0/18 covers it; 1.19.5.0/24 lies inside 1.19.0.0/16.
    expect(lines).not.toContain("1.32.128.9");
    expect(lines).not.toContain("1.19.5.0/24");
    expect(lines).toContain("1.19.0.0/16");
    const cidr = (await blocklist("format=cidr&riskLevel=HIGH")).body.trimEnd().split("\n");
    expect(cidr).toContain("1.10.16.0/20");
    expect(cidr).toContain("45.148.10.81/32");
    const nft = (await blocklist("format=nft&riskLevel=HIGH")).body;
    expect(nft).toContain("flags interval;");
    expect(nft).toContain("1.10.16.0/20");
    const ipset = (await blocklist("format=ipset&riskLevel=HIGH")).body;
    expect(ipset).toContain("hash:net");
    expect(ipset).toContain("add abuse_intel_v4_next 1.10.16.0/20");
    const json = JSON.parse((await blocklist("format=json&riskLevel=HIGH")).body) as { data: { ips: string[] } };
    expect(json.data.ips).toContain("2001:678:738::/48");
  });

  test("a replace that drops a network drops it from every format and from the detail record, with one ETag change", async () => {
    const before = await blocklist("format=txt&riskLevel=HIGH");
    const res = await importList("spamhaus-drop", "1.10.16.0/20 ; SBL256894\n1.19.0.0/16 ; SBL434604\n", "category=SPAM&replace=true");
    expect(((await bodyOf(res)) as { data: { entries: number } }).data.entries).toBe(2);
    const after = await blocklist("format=txt&riskLevel=HIGH");
    expect(after.etag).not.toBe(before.etag);
    for (const format of ["txt", "cidr", "nft", "ipset", "json", "csv"]) {
      const body = (await blocklist(`format=${format}&riskLevel=HIGH`)).body;
      expect(body).not.toContain("1.32.128.0/18");
      expect(body).not.toContain("2001:678:738::");
      expect(body).toContain("1.10.16.0/20");
    }
    expect(await detail("2001:678:738:1::5")).toMatchObject({ networks: [], reputationScore: 100, reports: 0 });
    // The reported address inside the dropped network keeps only its own report: 0.6 → round(100 × e^-0.4) = 67.
    expect(await detail("1.32.128.9")).toMatchObject({ reports: 1, reputationScore: 67, networks: [] });
    // The same list again changes nothing the list shows.
    const again = await importList("spamhaus-drop", "1.10.16.0/20\n1.19.0.0/16\n", "category=SPAM&replace=true");
    expect(again.status).toBe(200);
  });

  test("a replace with no valid line is refused and keeps the entries", async () => {
    const res = await importList("spamhaus-drop", "; nothing\nnot-an-address\n", "category=SPAM&replace=true");
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toMatchObject({ success: false, code: "bad_request" });
    expect((await detail("1.10.16.1")).networks).toHaveLength(1);
  });

  test("bad lines are listed with their numbers and skipped", async () => {
    const res = await importList("mixed", fixture("bad.txt"), "category=SPAM");
    const data = ((await bodyOf(res)) as { data: { entries: number; badLines: number; errors: { line: number }[] } }).data;
    expect(data.entries).toBe(1);
    expect(data.badLines).toBe(4);
    expect(data.errors.map((e) => e.line)).toEqual([3, 4, 5, 6]);
  });

  test("errors: a missing or unknown category, a bad severity, a non-admin, a JSON body", async () => {
    expect((await importList("x", "10.9.0.0/16\n", "")).status).toBe(400);
    const unknown = await importList("x", "10.9.0.0/16\n", "category=NOPE");
    expect(unknown.status).toBe(400);
    expect(((await bodyOf(unknown)) as { error: string }).error).toContain("allowed values: SPAM");
    expect((await importList("x", "10.9.0.0/16\n", "category=SPAM&severity=9")).status).toBe(400);
    expect((await importList("x", "10.9.0.0/16\n", "category=SPAM", user.jwt)).status).toBe(403);
    expect((await importList("bad name!", "10.9.0.0/16\n", "category=SPAM")).status).toBe(400);
    const json = await h.call("POST", "/v1/admin/feeds/x?category=SPAM", { headers: admin.jwt, json: { list: "10.9.0.0/16" } });
    expect(json.status).toBe(415);
    expect((await detail("10.9.0.1")).networks).toEqual([]);
    expect((await h.call("GET", "/v1/admin/feeds/x", { headers: admin.jwt })).status).toBe(404);
  });

  test("removing a feed removes its listings", async () => {
    const res = await h.call("DELETE", "/v1/admin/feeds/blocklist-de", { headers: admin.jwt });
    expect(res.status).toBe(200);
    expect(await detail("45.148.10.81")).toMatchObject({ reports: 0, reputationScore: 100, networks: [] });
    expect((await blocklist("format=txt&riskLevel=LOW")).body).not.toContain("45.148.10.81");
    expect((await h.call("DELETE", "/v1/admin/feeds/blocklist-de", { headers: admin.jwt })).status).toBe(404);
  });

  test("the listings survive a restart", async () => {
    h = await h.reopen();
    expect((await detail("1.10.16.1")).networks).toEqual([{ cidr: "1.10.16.0/20", source: "spamhaus-drop", category: "SPAM" }]);
    expect(await detail("1.19.5.5")).toMatchObject({ reputationScore: 22 });
    expect(await detail("1.32.128.9")).toMatchObject({ reputationScore: 67 });
  });
});

describe("scheduled feeds (GET/POST/DELETE /v1/admin/feeds)", () => {
  let server: ReturnType<typeof Bun.serve>;
  let listBody = "203.0.113.0/24\n198.51.100.7\n";
  let status = 200;
  const seen: { ifNoneMatch: string | null }[] = [];

  beforeAll(() => {
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        const ifNoneMatch = request.headers.get("if-none-match");
        seen.push({ ifNoneMatch });
        if (status !== 200) return new Response("broken", { status });
        const etag = `"${Bun.hash(listBody).toString(16)}"`;
        if (ifNoneMatch === etag) return new Response(null, { status: 304, headers: { etag } });
        return new Response(listBody, { headers: { etag, "content-type": "text/plain" } });
      },
    });
  });
  afterAll(() => server.stop(true));

  const url = () => `http://127.0.0.1:${server.port}/firehol_level1.netset`;
  const refresh = async (name: string) => ((await bodyOf(await h.call("POST", `/v1/admin/feeds/${name}/refresh`, { headers: admin.jwt }))) as { data: Record<string, unknown> }).data;

  test("added from a URL: refreshed at once, listed with its status", async () => {
    const res = await h.call("POST", "/v1/admin/feeds", { headers: admin.jwt, json: { name: "firehol", url: url(), category: "HACKING", schedule: "*/30 * * * * *" } });
    expect(res.status).toBe(201);
    const data = ((await bodyOf(res)) as { data: { feed: Record<string, unknown>; refresh: Record<string, unknown> } }).data;
    expect(data.refresh).toMatchObject({ result: "updated", entries: 2, error: null });
    expect(data.feed).toMatchObject({ name: "firehol", entries: 2, source: { url: url() }, schedule: "*/30 * * * * *", lastError: null, severity: 4 });
    expect(data.feed.nextRefreshAt).toBeString();
    expect((await detail("203.0.113.77")).networks).toEqual([{ cidr: "203.0.113.0/24", source: "firehol", category: "HACKING" }]);
    const listed = ((await bodyOf(await h.call("GET", "/v1/admin/feeds", { headers: admin.jwt }))) as { data: { name: string }[] }).data;
    expect(listed.map((f) => f.name)).toContain("firehol");
  });

  test("an unchanged list: If-None-Match, 304, entries kept", async () => {
    expect(await refresh("firehol")).toMatchObject({ result: "unchanged", error: null });
    expect(seen.at(-1)?.ifNoneMatch).toStartWith('"');
  });

  test("a 500 keeps the entries and records the error", async () => {
    status = 500;
    const outcome = await refresh("firehol");
    expect(outcome).toMatchObject({ result: "failed" });
    expect(String(outcome.error)).toContain("HTTP 500");
    expect((await detail("203.0.113.77")).networks).toHaveLength(1);
    const feed = ((await bodyOf(await h.call("GET", "/v1/admin/feeds/firehol", { headers: admin.jwt }))) as { data: Record<string, unknown> }).data;
    expect(String(feed.lastError)).toContain("HTTP 500");
    expect(feed.entries).toBe(2);
    status = 200;
  });

  test("a list that parses to nothing keeps the entries", async () => {
    listBody = "# nothing here today\n";
    expect(await refresh("firehol")).toMatchObject({ result: "failed" });
    expect((await detail("203.0.113.77")).networks).toHaveLength(1);
  });

  test("a new list replaces the old: the dropped network leaves every format and the detail record", async () => {
    listBody = "198.51.100.7\n192.0.2.0/25\n";
    expect(await refresh("firehol")).toMatchObject({ result: "updated", entries: 2 });
    expect((await detail("203.0.113.77")).networks).toEqual([]);
    for (const format of ["txt", "cidr", "nft", "ipset", "json", "csv"]) {
      const body = (await blocklist(`format=${format}&riskLevel=HIGH`)).body;
      expect(body).not.toContain("203.0.113.0");
      expect(body).toContain("192.0.2.0/25");
    }
  });

  test("an unreachable URL keeps the entries", async () => {
    const res = await h.call("POST", "/v1/admin/feeds", { headers: admin.jwt, json: { name: "gone", url: "http://127.0.0.1:9/list.txt", category: "SPAM" } });
    expect(res.status).toBe(201);
    const data = ((await bodyOf(res)) as { data: { refresh: Record<string, unknown>; feed: Record<string, unknown> } }).data;
    expect(data.refresh.result).toBe("failed");
    expect(data.feed.lastError).toBeString();
    expect(data.feed.schedule).toBe("0 * * * *");
  });

  test("a feed from a file path", async () => {
    const file = join(h.dataDir, "edrop.txt");
    writeFileSync(file, "; EDROP\n2.56.192.0/22 ; SBL459831\n");
    const res = await h.call("POST", "/v1/admin/feeds", { headers: admin.jwt, json: { name: "edrop", file, category: "SPAM", severity: 5 } });
    expect(((await bodyOf(res)) as { data: { refresh: Record<string, unknown> } }).data.refresh).toMatchObject({ result: "updated", entries: 1 });
    rmSync(file);
    expect(await refresh("edrop")).toMatchObject({ result: "failed" });
    expect((await detail("2.56.193.1")).networks).toEqual([{ cidr: "2.56.192.0/22", source: "edrop", category: "SPAM" }]);
  });

  test("a refresh reads a long list on a worker thread and changes the entries over several turns of the event loop, so requests are served meanwhile (issue 29)", async () => {
    const file = join(h.dataDir, "long.txt");
    const lines = 3 * PARSE_STEP_LINES;
    writeFileSync(file, Array.from({ length: lines }, (_, i) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`).join("\n") + "\n");
    const res = await h.call("POST", "/v1/admin/feeds", { headers: admin.jwt, json: { name: "long", file, category: "SPAM" } });
    expect(((await bodyOf(res)) as { data: { refresh: Record<string, unknown> } }).data.refresh).toMatchObject({ result: "updated", entries: lines });
    const { value: outcome, turns } = await turnsTaken(() => h.services.feeds.refresher.refresh("long"));
    expect(outcome).toMatchObject({ result: "updated", entries: lines });
    // A step moves at most STEP_ENTRIES entries: the refresh's moves alone take that many turns.
    expect(turns).toBeGreaterThanOrEqual(lines / STEP_ENTRIES);
    expect((await h.call("DELETE", "/v1/admin/feeds/long", { headers: admin.jwt })).status).toBe(200);
  }, 60_000);

  test("bad definitions: no source, two sources, a relative file path, a bad schedule, a bad URL", async () => {
    const post = (json: Record<string, unknown>) => h.call("POST", "/v1/admin/feeds", { headers: admin.jwt, json: { name: "bad", category: "SPAM", ...json } });
    expect((await post({})).status).toBe(400);
    // The server would read it against its own working directory, not the caller's.
    const relative = await post({ file: "lists/drop.txt" });
    expect(relative.status).toBe(400);
    expect(((await bodyOf(relative)) as { details: { field: string }[] }).details.map((d) => d.field)).toEqual(["file"]);
    expect((await post({ url: url(), file: "/tmp/x" })).status).toBe(400);
    expect((await post({ url: url(), schedule: "every day" })).status).toBe(400);
    expect((await post({ url: "ftp://example.test/x" })).status).toBe(400);
    expect((await h.call("GET", "/v1/admin/feeds/bad", { headers: admin.jwt })).status).toBe(404);
  });

  test("DELETE /v1/admin/feeds with the name in the body", async () => {
    const res = await h.call("DELETE", "/v1/admin/feeds", { headers: admin.jwt, json: { name: "firehol" } });
    expect(res.status).toBe(200);
    expect((await detail("192.0.2.1")).networks).toEqual([]);
  });
});

describe("listed networks and the allowlist (contract 5.10: allowlisted addresses never appear)", () => {
  test("a listed network the allowlist overlaps is listed as the blocks around it, on every list and to bouncers", async () => {
    expect((await importList("cut", "192.0.2.0/24\n2001:db8:77::/48\n198.18.0.0/24\n", "category=SSH&severity=5")).status).toBe(200);
    for (const cidr of ["192.0.2.7/32", "2001:db8:77::/64", "198.18.0.0/23"]) {
      expect((await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr, note: "ours" } })).status).toBeLessThan(300);
    }
    const cidrs = (await (await h.call("GET", "/v1/ip/blocklist?format=cidr&risk=LOW", { headers: user.apiKey })).text()).split("\n");
    const around7 = ["192.0.2.0/30", "192.0.2.4/31", "192.0.2.6/32", "192.0.2.8/29", "192.0.2.16/28", "192.0.2.32/27", "192.0.2.64/26", "192.0.2.128/25"];
    for (const block of around7) expect(cidrs).toContain(block);
    expect(cidrs).not.toContain("192.0.2.0/24");
    expect(cidrs).toContain("2001:db8:77:1::/64");
    expect(cidrs).toContain("2001:db8:77:8000::/49");
    expect(cidrs.some((c) => c.startsWith("2001:db8:77::/"))).toBe(false);
    // Held whole by an allowlisted /23: gone.
    expect(cidrs.some((c) => c.startsWith("198.18.0."))).toBe(false);
    // The bouncers: no decision bans 192.0.2.7, one bans its neighbour through a block.
    expect(await (await h.call("GET", "/v1/decisions?ip=192.0.2.7", { headers: { "x-api-key": admin.key } })).text()).toBe("null");
    const neighbour = (await (await h.call("GET", "/v1/decisions?ip=192.0.2.6", { headers: { "x-api-key": admin.key } })).json()) as { value: string }[];
    expect(neighbour.map((d) => d.value)).toEqual(["192.0.2.6"]);
    expect((await h.call("DELETE", "/v1/admin/feeds/cut", { headers: admin.jwt })).status).toBeLessThan(300);
  });
});

describe("a scheduled feed defined again", () => {
  test("another category and severity reach the listings at once, though the publisher answers 304 to the old validators", async () => {
    const publisher = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => (req.headers.get("if-none-match") === '"v1"' ? new Response(null, { status: 304, headers: { etag: '"v1"' } }) : new Response("198.51.100.0/24\n", { headers: { etag: '"v1"' } })),
    });
    try {
      const url = `http://127.0.0.1:${publisher.port}/drop.txt`;
      const define = (category: string, severity: number) => h.call("POST", "/v1/admin/feeds", { headers: admin.jwt, json: { name: "redefined", url, category, severity } });
      expect((await define("SSH", 1)).status).toBe(201);
      expect((await detail("198.51.100.9")).networks).toEqual([{ cidr: "198.51.100.0/24", source: "redefined", category: "SSH" }]);
      const { FeedTables } = await import("../../src/store/feeds");
      const versionBefore = new FeedTables(h.store).version();
      expect((await define("SPAM", 5)).status).toBe(201);
      expect((await detail("198.51.100.9")).networks).toEqual([{ cidr: "198.51.100.0/24", source: "redefined", category: "SPAM" }]);
      // What another process's change of a definition alone is noticed by.
      expect(new FeedTables(h.store).version()).not.toBe(versionBefore);
    } finally {
      publisher.stop(true);
      await h.call("DELETE", "/v1/admin/feeds/redefined", { headers: admin.jwt });
    }
  });
});
