// Feed changes in steps (issue 29): a large import, replace or removal made through the admin API, and another
// connection's import followed by the server, run a chunk at a time with turns of the event loop between, so
// lookups are answered meanwhile; between any two steps each entry's store row, listing and index record agree,
// and at the end the listings, the index and the store hold the same entries.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createFeedServices, oneShotBlocklistImport } from "../../src/app/feed-services";
import { parseIp } from "../../src/domain/ip";
import { NOT_FOUND } from "../../src/index/radix-common";
import { STEP_ENTRIES } from "../../src/services/feeds/feed-change";
import { FOLLOW_PAGE_ENTRIES } from "../../src/services/feeds/feed-follow";
import { openStore, type Store } from "../../src/store/database";
import { addUser, type TestUser } from "../support/accounts";
import { turnsTaken } from "../support/event-loop-watch";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let admin: TestUser;
let user: TestUser;
let reporter: TestUser;

beforeAll(async () => {
  h = await createHarness();
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
  user = await addUser(h, { tier: "enterprise" });
  reporter = await addUser(h, { email: "steps-reporter@example.com" });
});
afterAll(() => h.close());

/** `count` addresses 10.b.c.d from `from` on, one a line. */
const addresses = (prefix: number, from: number, count: number) =>
  Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return `${prefix}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
  });

const importList = (name: string, lines: string[], query: string) =>
  h.call("POST", `/v1/admin/feeds/${name}?${query}`, { headers: { ...admin.jwt, "content-type": "text/plain" }, body: `${lines.join("\n")}\n` });
const detail = async (ip: string) => (await bodyOf(await h.call("GET", `/v1/ip/${ip}`, { headers: user.apiKey }))) as { networks: { cidr: string; source: string; category: string }[]; reputationScore: number };

/** The CIDRs the store lists under `feed`. */
const storedEntries = (store: Store, feed: string) =>
  new Set((store.sqlite.query("SELECT cidr FROM feed_entries WHERE feed_name = ?").all(feed) as { cidr: string }[]).map((r) => r.cidr));

/** Whether the server's index holds a record for the address (a listed address with no report has one only while listed). */
const indexed = (ip: string) => h.services.index.slotOf(parseIp(ip)) !== NOT_FOUND;

/**
 * Watches `samples` at every turn of the event loop until `stop()`: each time, an address's store row (listed by
 * `feed`), its listing in memory and its index record must agree. Returns the states seen, as listed counts.
 */
function watchAgreement(feed: string, samples: string[]) {
  const seen = new Set<number>();
  const disagreements: string[] = [];
  let running = true;
  const look = () => {
    if (!running) return;
    const rows = storedEntries(h.store, feed);
    let listed = 0;
    for (const ip of samples) {
      const inStore = rows.has(`${ip}/32`) || rows.has(ip);
      const inMemory = h.services.feeds.service.listed.listsAddress(parseIp(ip));
      if (inStore !== inMemory || inStore !== indexed(ip)) disagreements.push(`${ip}: store ${inStore}, listings ${inMemory}, index ${indexed(ip)}`);
      if (inStore) listed++;
    }
    seen.add(listed);
    setImmediate(look);
  };
  setImmediate(look);
  return {
    stop() {
      running = false;
      return { states: seen, disagreements };
    },
  };
}

describe("a feed change through the admin API runs in steps", () => {
  const size = 6 * STEP_ENTRIES;
  const first = addresses(10, 0, size);
  // Half of the first list stays, half goes, and as many come.
  const second = addresses(10, size / 2, size);

  test("a large replace answers lookups between its steps, and store, listings and index agree at each step", async () => {
    expect((await importList("big", first, "category=SPAM&replace=true")).status).toBe(200);
    expect(storedEntries(h.store, "big").size).toBe(size);
    h.clock.advance(60_000);
    const samples = [...first.filter((_, i) => i % 97 === 0), ...second.filter((_, i) => i % 89 === 0)];
    const watch = watchAgreement("big", samples);
    let answered = 0;
    let done = false;
    const lookups = (async () => {
      while (!done) {
        const res = await h.call("GET", `/v1/ip/${first[answered % size]}/reputation`, { headers: user.apiKey });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        answered++;
      }
    })();
    const { value: res, turns } = await turnsTaken(() => importList("big", second, "category=SPAM&replace=true"));
    const answeredDuring = answered;
    done = true;
    await lookups;
    const { states, disagreements } = watch.stop();
    expect(res.status).toBe(200);
    expect(((await bodyOf(res)) as { data: Record<string, unknown> }).data).toMatchObject({ feed: "big", imported: size, entries: size });
    expect(disagreements).toEqual([]);
    // Lookups were answered while the change ran, over many turns, and some saw it half done.
    expect(answeredDuring).toBeGreaterThan(0);
    expect(turns).toBeGreaterThanOrEqual(size / STEP_ENTRIES);
    expect(states.size).toBeGreaterThan(2);
    // At the end: the store lists the second list only, and the index and listings agree with it.
    expect(storedEntries(h.store, "big")).toEqual(new Set(second.map((ip) => `${ip}/32`)));
    for (const ip of samples) expect(indexed(ip)).toBe(second.includes(ip));
    const feed = ((await bodyOf(await h.call("GET", "/v1/admin/feeds/big", { headers: admin.jwt }))) as { data: { entries: number; lastError: string | null } }).data;
    expect(feed).toMatchObject({ entries: size, lastError: null });
  }, 120_000);

  test("a reported address inside a network the change lists is rescored in the step that lists it", async () => {
    const report = await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ipAddress: "172.20.3.4", category: "SSH", description: "x", severity: 3 } });
    expect(report.status).toBe(201);
    const before = (await detail("172.20.3.4")).reputationScore;
    const lines = [...addresses(11, 0, 2 * STEP_ENTRIES), "172.20.0.0/16"];
    expect((await importList("wide", lines, "category=SPAM&severity=5&replace=true")).status).toBe(200);
    const after = await detail("172.20.3.4");
    expect(after.networks.map((n) => n.cidr)).toEqual(["172.20.0.0/16"]);
    expect(after.reputationScore).toBeLessThan(before);
    expect((await h.call("DELETE", "/v1/admin/feeds/wide", { headers: admin.jwt })).status).toBe(200);
    const gone = await detail("172.20.3.4");
    expect(gone.networks).toEqual([]);
    expect(gone.reputationScore).toBe(before);
    expect(indexed("11.0.0.1")).toBe(false);
  }, 120_000);

  test("a removal runs in steps too, and two changes asked at once run one after the other", async () => {
    const watch = watchAgreement("big", second.filter((_, i) => i % 61 === 0));
    const { value: removed, turns } = await turnsTaken(async () => {
      const [a, b] = await Promise.all([h.call("DELETE", "/v1/admin/feeds/big", { headers: admin.jwt }), importList("next", addresses(12, 0, 3 * STEP_ENTRIES), "category=SSH&replace=true")]);
      return [a.status, b.status];
    });
    expect(watch.stop().disagreements).toEqual([]);
    expect(removed).toEqual([200, 200]);
    expect(turns).toBeGreaterThanOrEqual(size / STEP_ENTRIES);
    expect(storedEntries(h.store, "big").size).toBe(0);
    expect(storedEntries(h.store, "next").size).toBe(3 * STEP_ENTRIES);
    expect(indexed(second[0]!)).toBe(false);
    expect(indexed("12.0.0.7")).toBe(true);
    expect((await h.call("DELETE", "/v1/admin/feeds/next", { headers: admin.jwt })).status).toBe(200);
  }, 120_000);
});

describe("another connection's feed import is followed in steps", () => {
  test("the listings and the index follow, over many turns, and a second import arriving mid-follow is followed too", async () => {
    // `import blocklist` as the CLI makes it (its own connection, its one-shot import), on the server's clock.
    const cli = openStore(h.dataDir);
    try {
      const importOnce = oneShotBlocklistImport(cli, h.services.config, h.clock);
      const cliFeeds = createFeedServices(cli, h.services.config, h.clock, true);
      const report = (ip: string) => h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ipAddress: ip, category: "SSH", description: "x", severity: 3 } });
      expect((await report("14.1.9.9")).status).toBe(201);
      const size = 5 * FOLLOW_PAGE_ENTRIES;
      const a = addresses(13, 0, size);
      const b = addresses(13, size / 2, size);
      expect(importOnce("ext", `${a.join("\n")}\n`, { category: "SPAM", severity: 4, replace: true })).toMatchObject({ imported: size, entries: size });
      let secondDone = false;
      let turnsBeforeSecond = 0;
      const mid = () => {
        // A few turns into the follow, the other process replaces the list and adds another feed.
        if (++turnsBeforeSecond < 3) return void setImmediate(mid);
        importOnce("ext", `${b.join("\n")}\n`, { category: "SPAM", severity: 4, replace: true });
        expect(importOnce("ext2", "14.1.0.0/16\n", { category: "HACKING", severity: 3, replace: true })).toMatchObject({ entries: 1, rescored: 1 });
        secondDone = true;
      };
      setImmediate(mid);
      const { turns } = await turnsTaken(() => h.services.feeds.followExternalChanges());
      expect(secondDone).toBe(true);
      // Followed to the end: another call finds nothing left.
      await h.services.feeds.followExternalChanges();
      expect(turns).toBeGreaterThanOrEqual(size / FOLLOW_PAGE_ENTRIES);
      const listed = h.services.feeds.service.listed;
      for (const ip of [...a.filter((_, i) => i % 53 === 0), ...b.filter((_, i) => i % 47 === 0)]) {
        expect(listed.listsAddress(parseIp(ip))).toBe(b.includes(ip));
        expect(indexed(ip)).toBe(b.includes(ip));
      }
      expect(listed.size).toBe(size + 1);
      expect((await detail("14.1.2.3")).networks).toEqual([{ cidr: "14.1.0.0/16", source: "ext2", category: "HACKING" }]);
      expect(h.services.feeds.list().map((f) => [f.name, f.entries, f.lastError])).toEqual([["ext", size, null], ["ext2", 1, null]]);
      // The address reported before the CLI listed its network: rescored by the CLI, the row reaches the server
      // through the change log; the same report on another address of the network, made now, is the reference.
      expect((await report("14.1.8.8")).status).toBe(201);
      const deadline = Date.now() + 60_000;
      while ((await detail("14.1.9.9")).reputationScore !== (await detail("14.1.8.8")).reputationScore) {
        if (Date.now() > deadline) throw new Error("the server never took the CLI's rescoring");
        await Bun.sleep(50);
      }
      expect((await detail("14.1.9.9")).networks.map((n) => n.cidr)).toEqual(["14.1.0.0/16"]);
      cliFeeds.remove("ext");
      cliFeeds.remove("ext2");
      await h.services.feeds.followExternalChanges();
      expect(listed.size).toBe(0);
      expect(indexed(b[0]!)).toBe(false);
      expect((await detail("14.1.2.3")).networks).toEqual([]);
    } finally {
      cli.close();
    }
  }, 120_000);
});
