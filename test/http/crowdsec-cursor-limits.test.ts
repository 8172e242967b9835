// Bouncers' decision cursors are bounded (contract 14, docs/decisions.md): a key keeps the cursors of its 64 most
// recently pulled client addresses (a key configured on an edge or snapshot server, 1,024), and a cursor not
// pulled for 620 hours (the longest decision duration, 596 h, and a day) is dropped. A bouncer whose cursor was
// dropped gets everything listed, and in `deleted` what left the list within its duration (the removal log,
// persisted: it survives a restart), so it never keeps a stale entry until it times out.
// On a primary (its table), a snapshot server (in memory) and an edge (its cursors' file), through real pulls from
// real client addresses (127.0.x.y on loopback).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { createSnapshotServices, type SnapshotServices } from "../../src/app/snapshot-services";
import { defaultConfig } from "../../src/config";
import { createApp } from "../../src/http/app";
import { listen } from "../../src/http/server";
import { BouncerRegistry } from "../../src/services/bouncers/registry";
import { exportSnapshot } from "../../src/services/snapshots/export";
import { BouncerTables } from "../../src/store/bouncers";
import { EdgeCursorFile } from "../../src/store/edge-cursors";
import { addUser } from "../support/accounts";
import { type DecisionStream, pullDecisions } from "../support/decision-pull";
import { createHarness, type Harness } from "../support/harness";

const PER_KEY = 64;
const PER_STATIC_KEY = 1024;
const IDLE_LIMIT_MS = (596 + 24) * 3600 * 1000;
const STATIC_KEY = "static-key-for-the-cursor-limits-0123456789";

/** One server under test: where to pull, with which key, and how many cursors holding decisions it stores. */
interface Target {
  port: number;
  key: string;
  /** Cursors a key keeps on this server. */
  perKey: number;
  storedCursors(): number;
  close(): Promise<void>;
}

let h: Harness;
let dir: string;
let snapshotFile: string;

beforeAll(async () => {
  h = await createHarness();
  h.services.feeds.importText("lab", "203.0.113.0/24\n198.51.100.7\n198.51.100.8\n", { category: "HACKING", severity: 4, replace: false });
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-cursor-limits-"));
  snapshotFile = join(dir, "s.sqlite");
  await exportSnapshot({ store: h.store, services: h.services, out: snapshotFile, nowMs: h.clock.now() });
});
afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

async function primary(): Promise<Target> {
  const user = await addUser(h);
  const count = h.store.sqlite.prepare<{ n: number }, [number]>("SELECT count(*) AS n FROM decision_cursors WHERE api_key_id = ? AND filter_key IS NOT NULL");
  return { port: Number(new URL(h.url).port), key: user.key, perKey: PER_KEY, storedCursors: () => count.get(user.keyId)!.n, close: async () => {} };
}

async function snapshotServer(cursorFile: string | null, apiKeys = [STATIC_KEY]): Promise<Target> {
  const file = cursorFile === null ? null : new EdgeCursorFile(cursorFile);
  const snap: SnapshotServices = await createSnapshotServices({
    config: { ...defaultConfig(), dataDir: dir, snapshot: snapshotFile, apiKeys },
    clock: h.clock,
    bouncerCursors: file ?? undefined,
  });
  const server: Server<undefined> = listen(snap, createApp(snap), { hostname: "127.0.0.1", port: 0 });
  const inFile = () => {
    const db = new Database(cursorFile as string, { readonly: true });
    try {
      return (db.query("SELECT count(*) AS n FROM decision_cursors").get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  // The in-memory cursors are not visible from outside: counted by their answers instead (below) on that server.
  return {
    port: server.port as number,
    key: STATIC_KEY,
    perKey: PER_STATIC_KEY,
    storedCursors: file === null ? () => -1 : inFile,
    close: async () => {
      server.stop(true);
      await snap.stop();
      file?.close();
    },
  };
}

/**
 * A pull of the decisions stream sent from the client address `from` (bound on loopback), a second after the
 * previous one: which cursors were pulled most recently is told by their times.
 */
function pullFrom(t: Target, from: string, query = ""): Promise<DecisionStream> {
  h.clock.advance(1000);
  return pullDecisions(t.port, t.key, from, query);
}

const client = (n: number) => `127.0.${1 + (n >> 8)}.${n & 255}`;
const values = (decisions: { value: string }[]) => decisions.map((d) => d.value).sort();
/** Everything listed in `new`, nothing in `deleted`: what a startup answer says. */
function expectStartupAnswer(answer: DecisionStream, listed: string[]) {
  expect(values(answer.new)).toEqual(listed);
  expect(answer.deleted).toEqual([]);
}
/** What the startup answer holds now (from an address no other pull uses). */
const startupValues = async (t: Target) => values((await pullFrom(t, "127.0.200.1", "startup=true")).new);

describe.each([
  ["a primary (its decision_cursors table)", () => primary()],
  ["a snapshot server (cursors in memory)", () => snapshotServer(null)],
  ["an edge (its bouncer-cursors file)", () => snapshotServer(join(dir, `bouncer-cursors-${Date.now()}.sqlite`))],
])("%s", (_name, open) => {
  let t: Target;
  beforeAll(async () => {
    t = await open();
  });
  afterAll(() => t.close());

  test("a key pulling from 36 client addresses more than it keeps keeps the most recently pulled; the others get the startup answer again", async () => {
    const pulled = t.perKey + 36;
    const listed = await startupValues(t);
    expect(listed.length).toBeGreaterThan(0);
    for (let n = 1; n <= pulled; n++) expect(values((await pullFrom(t, client(n))).new)).toEqual(listed);
    // The newest perKey (the startup pull's address being older than all of them) are deltas: nothing changed.
    for (let n = pulled - t.perKey + 1; n <= pulled; n++) expect(await pullFrom(t, client(n))).toEqual({ new: [], deleted: [] });
    if (t.storedCursors() >= 0) expect(t.storedCursors()).toBe(t.perKey);
    // The one just older was dropped: its bouncer is told everything again, and in deleted what left the list
    // (nothing here; see the removal log's test below), and the least recently pulled now makes room for it.
    expectStartupAnswer(await pullFrom(t, client(pulled - t.perKey)), listed);
    if (t.storedCursors() >= 0) expect(t.storedCursors()).toBe(t.perKey);
  }, 120_000);

  test("a cursor not pulled for 620 hours is dropped: its bouncer's next pull is the startup answer (what it held ran out); one pulled since is kept", async () => {
    // The last two addresses of the test before were pulled last (each pull moves the clock a second).
    const [older, newest] = [t.perKey + 35, t.perKey + 36];
    h.clock.advance(IDLE_LIMIT_MS - 60_000);
    // Just within the limit: still a delta (everything held is about to run out: sent again in deleted and new).
    const within = await pullFrom(t, client(older));
    expect(within.deleted.length).toBeGreaterThan(0);
    expect(values(within.deleted)).toEqual(values(within.new));
    h.clock.advance(2 * 60_000);
    const listed = await startupValues(t);
    expectStartupAnswer(await pullFrom(t, client(newest)), listed);
    // `older` was pulled 2 minutes ago: a delta with nothing in it.
    expect(await pullFrom(t, client(older))).toEqual({ new: [], deleted: [] });
    // The other idle cursors hold no decisions any more: `older`, `newest` and the startup pull's address are left.
    if (t.storedCursors() >= 0) expect(t.storedCursors()).toBe(3);
    // And on the snapshot server, where they cannot be counted: an idle one gets the startup answer.
    expectStartupAnswer(await pullFrom(t, client(newest - 50)), listed);
  }, 60_000);
});

test("on a primary, a bouncer whose cursors went idle still shows its last pull and where it came from", async () => {
  const registry = new BouncerRegistry({ store: h.store, tables: new BouncerTables(h.store), accounts: h.services.accounts, apiKeys: h.services.apiKeys, clock: h.clock });
  const { key } = await registry.add({ name: "quiet", mode: "ipset" });
  const t: Target = { port: Number(new URL(h.url).port), key, perKey: PER_KEY, storedCursors: () => -1, close: async () => {} };
  await pullFrom(t, "127.0.9.9", "startup=true");
  const pulledAt = registry.list().find((b) => b.name === "quiet")!.lastPullAt;
  h.clock.advance(IDLE_LIMIT_MS + 60_000);
  // Another key's pull sweeps idle cursors.
  await pullFrom({ ...t, key: (await addUser(h)).key }, "127.0.9.10");
  const view = registry.list().find((b) => b.name === "quiet")!;
  expect(view.lastPullAt).toBe(pulledAt);
  expect(view.lastPullFrom).toBe("127.0.9.9");
  const bytes = h.store.sqlite.query("SELECT sum(length(ids) + length(sent_at)) AS n FROM decision_cursors WHERE client_address = '127.0.9.9'").get() as { n: number };
  expect(bytes.n).toBe(0);
});

test("on an edge each configured key keeps its own cursors: two keys pulled from one address are two cursors", async () => {
  const other = "another-static-key-for-the-cursor-limits-9876543210";
  const t = await snapshotServer(join(dir, `bouncer-cursors-two-keys-${Date.now()}.sqlite`), [STATIC_KEY, other]);
  try {
    const listed = await startupValues(t);
    expectStartupAnswer(await pullFrom(t, "127.0.7.1", "startup=true"), listed);
    expectStartupAnswer(await pullFrom({ ...t, key: other }, "127.0.7.1", "startup=true"), listed);
    // The startup pull of startupValues, and one cursor per key at 127.0.7.1.
    expect(t.storedCursors()).toBe(3);
    expect(await pullFrom({ ...t, key: other }, "127.0.7.1")).toEqual({ new: [], deleted: [] });
  } finally {
    await t.close();
  }
});

test("on a primary, a bouncer whose cursor was crowded out is told what left the list meanwhile, after a restart too", async () => {
  const feeds = h.services.feeds;
  feeds.importText("crowd", "198.18.44.1\n198.18.44.2\n", { category: "HACKING", severity: 4, replace: true });
  const port = () => Number(new URL(h.url).port);
  const t: Target = { port: port(), key: (await addUser(h)).key, perKey: PER_KEY, storedCursors: () => -1, close: async () => {} };
  expect(values((await pullFrom(t, "127.0.33.1", "startup=true")).new)).toContain("198.18.44.2");
  // 198.18.44.2 leaves the list while 64 other bouncers of the key crowd the first one's cursor out.
  feeds.importText("crowd", "198.18.44.1\n", { category: "HACKING", severity: 4, replace: true });
  for (let n = 1; n <= PER_KEY; n++) await pullFrom(t, `127.0.34.${n}`, "startup=true");
  h = await h.reopen();
  const answer = await pullFrom({ ...t, port: port() }, "127.0.33.1");
  expect(values(answer.deleted)).toEqual(["198.18.44.2"]);
  expect(values(answer.new)).toContain("198.18.44.1");
  expect(values(answer.new)).not.toContain("198.18.44.2");
  // Its new cursor follows the journal: nothing more to say.
  expect(await pullFrom({ ...t, port: port() }, "127.0.33.1")).toEqual({ new: [], deleted: [] });
}, 120_000);
