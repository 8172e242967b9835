// The Local API routes a CrowdSec firewall bouncer uses (contract 14), over a real port: LAPI's wire format, the
// startup and delta answers, cursors per key and client address that survive a restart and move only when an
// answer went out whole, durations and their refresh, networks as Range decisions and their nftables expansion.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { currentDecisions } from "../../src/services/bouncers/decision-list";
import { BouncerRegistry } from "../../src/services/bouncers/registry";
import { BouncerTables } from "../../src/store/bouncers";
import { listen } from "../../src/http/server";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let server: Server<undefined>;
let reader: TestUser;
const reporters: TestUser[] = [];

interface Decision {
  id: number;
  uuid: string;
  origin: string;
  type: string;
  scope: string;
  value: string;
  duration: string;
  until: string;
  scenario: string;
}
interface Stream {
  new: Decision[];
  deleted: Decision[];
}

async function start(harness: Harness) {
  h = harness;
  server = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0 });
}

beforeAll(async () => {
  await start(await createHarness());
  reader = await addUser(h, { dailyLimit: 1 });
  for (let i = 0; i < 3; i++) reporters.push(await addUser(h));
});
afterAll(async () => {
  server.stop(true);
  await h.close();
});

const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;
const pull = async (key: string, query = ""): Promise<Stream> => {
  const res = await fetch(url(`/v1/decisions/stream?${query}`), { headers: { "X-Api-Key": key } });
  expect(res.status).toBe(200);
  return (await res.json()) as Stream;
};
const values = (decisions: Decision[]) => decisions.map((d) => d.value).sort();
/** Reports `ip` at severity 5 by `n` distinct reporters: 2 make it HIGH, 3 CRITICAL. */
async function report(ip: string, n: number) {
  for (let i = 0; i < n; i++) {
    const res = await h.call("POST", "/v1/ip/report", { headers: reporters[i].jwt, json: { ipAddress: ip, category: "SSH", description: "", severity: 5 } });
    expect(res.status).toBe(201);
  }
}
const registry = () => new BouncerRegistry({ store: h.store, tables: new BouncerTables(h.store), accounts: h.services.accounts, apiKeys: h.services.apiKeys, clock: h.clock });

describe("auth", () => {
  test.each([
    ["GET", "/v1/decisions/stream"],
    ["HEAD", "/v1/decisions/stream"],
    ["GET", "/v1/decisions?ip=1.2.3.4"],
    ["POST", "/v1/usage-metrics"],
  ])("%s %s without a key, or with a bad one: LAPI's 403", async (method, path) => {
    for (const headers of [{}, { "X-Api-Key": "nope" }] as Record<string, string>[]) {
      const res = await fetch(url(path), { method, headers });
      expect(res.status).toBe(403);
      if (method !== "HEAD") expect(await res.json()).toEqual({ message: "access forbidden" });
    }
  });
});

describe("the stream with the default filter (any API key)", () => {
  test("an empty list: both arrays, never null", async () => {
    const fresh = await addUser(h);
    const res = await fetch(url("/v1/decisions/stream?startup=true"), { headers: { "X-Api-Key": fresh.key } });
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(await res.text()).toBe('{"new":[],"deleted":[]}');
  });

  test("startup: HIGH and worse in new, complete decisions with integer ids; MEDIUM left out", async () => {
    await report("198.51.100.1", 2); // HIGH
    await report("198.51.100.2", 1); // MEDIUM
    await report("2001:db8::5", 3); // CRITICAL
    const answer = await pull(reader.key, "startup=true");
    expect(values(answer.new)).toEqual(["198.51.100.1", "2001:db8::5"]);
    expect(answer.deleted).toEqual([]);
    const d = answer.new.find((x) => x.value === "198.51.100.1")!;
    expect(Object.keys(d)).toEqual(["id", "uuid", "origin", "type", "scope", "value", "duration", "until", "scenario"]);
    expect(Number.isInteger(d.id)).toBe(true);
    expect(d).toMatchObject({ origin: "abuse-intel", type: "ban", scope: "Ip", duration: "596h0m0s", scenario: "abuse-intel/high" });
    expect(d.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(d.until) - h.clock.now()).toBeGreaterThan(595 * 3600 * 1000);
    for (const x of answer.new) for (const v of Object.values(x)) expect(v).not.toBeNull();
  });

  test("deltas: nothing changed gives empty arrays; a new CRITICAL address comes in new; an allowlisted one in deleted", async () => {
    expect(await pull(reader.key)).toEqual({ new: [], deleted: [] });
    await report("198.51.100.3", 3);
    const added = await pull(reader.key);
    expect(values(added.new)).toEqual(["198.51.100.3"]);
    expect(added.new[0].scenario).toBe("abuse-intel/critical");
    expect(added.deleted).toEqual([]);
    const admin = await addUser(h, { role: "admin" });
    expect((await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: "198.51.100.1/32", note: "ours" } })).status).toBe(201);
    const gone = await pull(reader.key);
    expect(gone.new).toEqual([]);
    expect(values(gone.deleted)).toEqual(["198.51.100.1"]);
    expect(await pull(reader.key)).toEqual({ new: [], deleted: [] });
  });

  test("ids stay the same while an entry stays listed", async () => {
    const a = (await pull(reader.key, "startup=true")).new.find((d) => d.value === "198.51.100.3")!;
    const b = (await pull(reader.key, "startup=true")).new.find((d) => d.value === "198.51.100.3")!;
    expect(a.id).toBe(b.id);
    expect(a.uuid).toBe(b.uuid);
  });

  test("pulls do not count against the daily budget (this key's account has a budget of 1)", async () => {
    for (let i = 0; i < 5; i++) await pull(reader.key);
  });

  test("HEAD answers 200 without a body and moves no cursor", async () => {
    await report("198.51.100.4", 3);
    const head = await fetch(url("/v1/decisions/stream"), { method: "HEAD", headers: { "X-Api-Key": reader.key } });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    expect(values((await pull(reader.key)).new)).toEqual(["198.51.100.4"]);
  });

  test("scopes: ip leaves out Range decisions; case and %2C do not matter", async () => {
    h.services.feeds.importText("lab", "203.0.113.0/24\n", { category: "HACKING", severity: 4, replace: false });
    const fresh = await addUser(h);
    const both = await pull(fresh.key, "startup=true&scopes=IP%2CRange");
    expect(both.new.some((d) => d.scope === "Range" && d.value === "203.0.113.0/24")).toBe(true);
    const ipOnly = await pull((await addUser(h)).key, "startup=true&scopes=ip");
    expect(ipOnly.new.every((d) => d.scope === "Ip")).toBe(true);
    expect(ipOnly.new.length).toBeGreaterThan(0);
  });

  test("a pull that leaves a scope out says nothing of that scope's entries: they are not deleted, and not new again after", async () => {
    const feeds = h.services.feeds;
    feeds.importText("scoped", "198.18.7.0/24\n198.18.9.9\n", { category: "HACKING", severity: 4, replace: true });
    const key = (await addUser(h)).key;
    const has = (decisions: Decision[], value: string) => decisions.some((d) => d.value === value);
    const first = await pull(key, "startup=true");
    expect(has(first.new, "198.18.7.0/24") && has(first.new, "198.18.9.9")).toBe(true);
    const ipOnly = await pull(key, "scopes=ip");
    expect(has(ipOnly.deleted, "198.18.7.0/24")).toBe(false);
    const both = await pull(key);
    expect(has(both.new, "198.18.7.0/24") || has(both.deleted, "198.18.7.0/24")).toBe(false);
    // The range leaves the list: a pull of addresses only still says nothing of it; the next of both scopes does.
    feeds.importText("scoped", "198.18.9.9\n", { category: "HACKING", severity: 4, replace: true });
    expect(has((await pull(key, "scopes=ip")).deleted, "198.18.7.0/24")).toBe(false);
    expect(has((await pull(key)).deleted, "198.18.7.0/24")).toBe(true);
    feeds.remove("scoped");
  });

  test("scenario filters are applied to scenario; other LAPI parameters are accepted", async () => {
    const critical = await pull((await addUser(h)).key, "startup=true&scenarios_containing=critical&origins=crowdsec&community_pull=false&additional_pull=false");
    expect(critical.new.length).toBeGreaterThan(0);
    expect(critical.new.every((d) => d.scenario === "abuse-intel/critical")).toBe(true);
    const notCritical = await pull((await addUser(h)).key, "startup=true&scenarios_not_containing=critical");
    expect(notCritical.new.every((d) => d.scenario !== "abuse-intel/critical")).toBe(true);
  });
});

describe("cursors", () => {
  test("a key with no cursor gets the startup answer; the cursor is kept per client address", async () => {
    const fresh = await addUser(h);
    const first = await pull(fresh.key);
    expect(first.new.length).toBeGreaterThan(0);
    expect(await pull(fresh.key)).toEqual({ new: [], deleted: [] });
  });

  test("an answer that did not go out whole moves no cursor", async () => {
    // An answer far larger than the socket buffers (about 25 MB): a feed of 100,000 addresses.
    const lines = Array.from({ length: 100_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`).join("\n");
    h.services.feeds.importText("many", lines, { category: "HACKING", severity: 4, replace: false });
    const fresh = await addUser(h);
    const controller = new AbortController();
    const res = await fetch(url("/v1/decisions/stream"), { headers: { "X-Api-Key": fresh.key }, signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await Bun.sleep(50);
    // Still no cursor: the next pull is the whole list again.
    const again = await pull(fresh.key);
    expect(again.new.length).toBeGreaterThan(100_000);
    expect(await pull(fresh.key)).toEqual({ new: [], deleted: [] });
    h.services.feeds.remove("many");
  }, 60_000);

  test("a delta pull's work follows what changed since its cursor, not the size of the list", async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `10.200.${(i >> 8) & 255}.${i & 255}`).join("\n");
    h.services.feeds.importText("sized", lines, { category: "HACKING", severity: 4, replace: true });
    const fresh = await addUser(h);
    expect((await pull(fresh.key, "startup=true")).new.length).toBeGreaterThanOrEqual(20_000);
    const { bouncers } = h.services;
    const counted = () => bouncers.work.entriesVisited + bouncers.journalRowsRead;
    let before = counted();
    for (let i = 0; i < 5; i++) expect(await pull(fresh.key)).toEqual({ new: [], deleted: [] });
    expect(counted() - before).toBe(0);
    // One address leaves and one enters: two changes read.
    h.services.feeds.importText("sized", `${lines.slice(lines.indexOf("\n") + 1)}\n10.201.0.1`, { category: "HACKING", severity: 4, replace: true });
    before = counted();
    const delta = await pull(fresh.key);
    expect(values(delta.new)).toEqual(["10.201.0.1"]);
    expect(values(delta.deleted)).toEqual(["10.200.0.0"]);
    expect(counted() - before).toBe(4);
    h.services.feeds.remove("sized");
  }, 60_000);

  test("reports that change addresses update the list from those addresses alone, and it stays what the index lists", async () => {
    const fresh = await addUser(h);
    await pull(fresh.key, "startup=true");
    const { bouncers } = h.services;
    const computed = bouncers.work.listsComputed;
    await report("198.51.100.60", 3); // enters (CRITICAL)
    await report("2001:db8::60", 3);
    await report("198.51.100.61", 1); // MEDIUM: not listed
    const delta = await pull(fresh.key);
    expect(values(delta.new)).toEqual(["198.51.100.60", "2001:db8::60"]);
    expect(bouncers.work.listsComputed).toBe(computed);
    // What the journal holds is what the whole list computed from the index gives.
    const listed = currentDecisions(h.services.index, h.services.allowlist.set, { minimumRisk: "HIGH", categories: null, expandNetworks: false });
    const startup = await pull((await addUser(h)).key, "startup=true");
    expect(startup.new.map((d) => d.id).sort((a, b) => a - b)).toEqual([...listed.ids]);
  }, 60_000);

  test("cursors survive a restart of the appliance", async () => {
    const fresh = await addUser(h);
    await pull(fresh.key, "startup=true");
    await report("198.51.100.5", 3);
    server.stop(true);
    await start(await h.reopen());
    const after = await pull(fresh.key);
    expect(values(after.new)).toEqual(["198.51.100.5"]);
    expect(after.deleted).toEqual([]);
  }, 60_000);
});

describe("bouncers added with the CLI's registry", () => {
  test("nftables mode: a listed /24 is one Range plus its 256 addresses; ipset mode: the Range only", async () => {
    const nft = await registry().add({ name: "edge-nft", mode: "nftables" });
    const ipset = await registry().add({ name: "edge-ipset", mode: "ipset", minimumRisk: "HIGH" });
    const n = await pull(nft.key, "startup=true");
    const inside = n.new.filter((d) => d.scope === "Ip" && d.value.startsWith("203.0.113."));
    expect(inside).toHaveLength(256);
    expect(n.new.some((d) => d.scope === "Range" && d.value === "203.0.113.0/24")).toBe(true);
    const i = await pull(ipset.key, "startup=true");
    expect(i.new.filter((d) => d.value.startsWith("203.0.113."))).toEqual([expect.objectContaining({ scope: "Range", value: "203.0.113.0/24" })]);
  }, 60_000);

  test("a bouncer's duration, and an entry still listed sent again in deleted and new before it runs out", async () => {
    const short = await registry().add({ name: "short", mode: "ipset", duration: "2h" });
    const first = await pull(short.key, "startup=true");
    expect(first.new[0].duration).toBe("2h0m0s");
    const count = first.new.length;
    h.clock.advance(30 * 60_000);
    expect(await pull(short.key)).toEqual({ new: [], deleted: [] });
    h.clock.advance(31 * 60_000);
    const refreshed = await pull(short.key);
    expect(refreshed.new.length).toBe(count);
    expect(values(refreshed.deleted)).toEqual(values(refreshed.new));
    expect(await pull(short.key)).toEqual({ new: [], deleted: [] });
  }, 60_000);

  test("list shows the last pull and where it came from; delete revokes the key", async () => {
    const view = registry().list().find((b) => b.name === "short")!;
    expect(view.lastPullFrom).toBe("127.0.0.1");
    expect(view.lastPullAt).not.toBeNull();
    const key = (await registry().add({ name: "to-delete" })).key;
    await pull(key, "startup=true");
    registry().remove("to-delete");
    h.services.credentials.refresh();
    const res = await fetch(url("/v1/decisions/stream"), { headers: { "X-Api-Key": key } });
    expect(res.status).toBe(403);
  });

  test("bad input to add is refused", async () => {
    await expect(registry().add({ name: "bad name" })).rejects.toThrow();
    await expect(registry().add({ name: "x", duration: "700h" })).rejects.toThrow();
    await expect(registry().add({ name: "x", minimumRisk: "EXTREME" })).rejects.toThrow();
    await expect(registry().add({ name: "short" })).rejects.toThrow("exists");
  });

  test("usage metrics: 201, noted for list", async () => {
    const b = await registry().add({ name: "metrics" });
    const res = await fetch(url("/v1/usage-metrics"), { method: "POST", headers: { "X-Api-Key": b.key, "content-type": "application/json" }, body: JSON.stringify({ remediation_components: [] }) });
    expect(res.status).toBe(201);
    expect(registry().list().find((x) => x.name === "metrics")!.lastUsageMetricsAt).not.toBeNull();
  });

  test("usage metrics: a body without a key is not read (403 at once, memory flat); a bouncer's over 64 KiB is 413, not noted", async () => {
    // 120 MiB streamed, one reused MiB at a time: buffered before the key was looked at, it grew the server by as much.
    const stream = (mib: number) => {
      const chunk = new Uint8Array(1 << 20).fill(0x20);
      let sent = 0;
      return new ReadableStream<Uint8Array>({ pull: (c) => (sent++ < mib ? c.enqueue(chunk) : c.close()) });
    };
    Bun.gc(true);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const stranger = await fetch(url("/v1/usage-metrics"), { method: "POST", body: stream(120), duplex: "half" } as RequestInit);
    clearInterval(sampler);
    expect(stranger.status).toBe(403);
    expect((peak - before) / 2 ** 20).toBeLessThan(32);

    const b = await registry().add({ name: "chatty" });
    const big = await fetch(url("/v1/usage-metrics"), { method: "POST", headers: { "X-Api-Key": b.key, "content-type": "application/json" }, body: `{"x":"${"a".repeat(70_000)}"}` });
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ message: "body larger than 64 KiB" });
    expect(registry().list().find((x) => x.name === "chatty")!.lastUsageMetricsAt).toBeNull();
  });
});

describe("GET /v1/decisions", () => {
  test("the address itself and every listed network around it; null when there are none", async () => {
    h.services.feeds.importText("wide", "203.0.0.0/16\n", { category: "HACKING", severity: 4, replace: false });
    const res = await fetch(url("/v1/decisions?ip=203.0.113.9"), { headers: { "X-Api-Key": reader.key } });
    const found = (await res.json()) as Decision[];
    expect(values(found)).toEqual(["203.0.0.0/16", "203.0.113.0/24"]);
    const one = (await (await fetch(url("/v1/decisions?ip=198.51.100.3"), { headers: { "X-Api-Key": reader.key } })).json()) as Decision[];
    expect(values(one)).toEqual(["198.51.100.3"]);
    const none = await fetch(url("/v1/decisions?ip=192.0.2.200"), { headers: { "X-Api-Key": reader.key } });
    expect(await none.text()).toBe("null");
    const range = (await (await fetch(url("/v1/decisions?range=203.0.113.0/24"), { headers: { "X-Api-Key": reader.key } })).json()) as Decision[];
    expect(values(range)).toEqual(["203.0.0.0/16", "203.0.113.0/24"]);
    expect((await fetch(url("/v1/decisions?ip=bogus"), { headers: { "X-Api-Key": reader.key } })).status).toBe(400);
  });
});
