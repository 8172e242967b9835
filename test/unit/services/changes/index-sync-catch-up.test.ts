// IndexSync.catchUp: the log is read only when another connection committed since the index last took in every
// commit; the server's own writes (already in the index when committed) are skipped over, not re-read. And a long
// catch-up is taken in slices, so a running server keeps answering meanwhile.

import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServices } from "../../../../src/app/create-services";
import { defaultConfig } from "../../../../src/config";
import { systemClock } from "../../../../src/domain/clock";
import { parseIp } from "../../../../src/domain/ip";
import { DEFAULT_RISK_THRESHOLDS } from "../../../../src/domain/risk";
import { NOT_FOUND } from "../../../../src/index/radix-common";
import { IndexSync, PRUNE_CHUNK } from "../../../../src/services/changes/index-sync";
import { openStore, type Store } from "../../../../src/store/database";
import { lastChangeSeq } from "../../../../src/store/index-generation";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs `body` with two connections to a fresh data directory: `store` (the server's) and `other` (another
 * process's), both closed afterwards.
 */
async function withTwoConnections(body: (store: Store, other: Store, dir: string) => void | Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "abuse-intel-catch-up-"));
  dirs.push(dir);
  const store = openStore(dir);
  const other = openStore(dir);
  try {
    await body(store, other, dir);
  } finally {
    other.close();
    store.close();
  }
}

function insertAddress(store: Store, ip: string, total: number): void {
  const now = Date.now();
  store.sqlite
    .query(
      `INSERT INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
         first_seen, last_seen, scored_at, rescore_due_at) VALUES (?, 4, 40, ?, 0, 2, 'BRUTE_FORCE', ?, ?, ?, NULL)`,
    )
    .run(ip, total, now - 60_000, now - 1000, now);
}

test("another connection's commit is followed; the server's own, logged after it, are skipped without reading", () =>
  withTwoConnections((store, other) => {
    const sync = IndexSync.build(store, DEFAULT_RISK_THRESHOLDS);
    const has = (ip: string) => sync.index.slotOf(parseIp(ip)) !== NOT_FOUND;

    // Another process's commit: followed.
    insertAddress(other, "45.33.7.7", 3);
    expect(sync.catchUp()).toBe(1);
    expect(has("45.33.7.7")).toBe(true);

    // This connection's own write, which (unlike the server's) did not reach the index: catchUp skips the log
    // entry, because no other connection committed; follow() would read it.
    insertAddress(store, "45.33.8.8", 2);
    expect(sync.catchUp()).toBe(0);
    expect(has("45.33.8.8")).toBe(false);
    expect(sync.follow()).toBe(0); // already past it
    // The position moved past the skipped entry, so pruning drops it.
    sync.prune();
    expect(lastChangeSeq(store)).toBeGreaterThan(0);
    expect(store.sqlite.query("SELECT count(*) AS n FROM address_change_log").get()).toEqual({ n: 0 });

    // Another commit after that: followed again, own entries around it included.
    insertAddress(store, "45.33.9.9", 1);
    insertAddress(other, "45.33.10.10", 4);
    expect(sync.catchUp()).toBe(2);
    expect(has("45.33.9.9") && has("45.33.10.10")).toBe(true);
  }));

test("a long catch-up can be taken in slices: each slice applies its part, the last says nothing is left", () =>
  withTwoConnections((store, other) => {
    const sync = IndexSync.build(store, DEFAULT_RISK_THRESHOLDS);
    const ips = Array.from({ length: 25 }, (_, i) => `45.34.0.${i + 1}`);
    other.sqlite.transaction(() => ips.forEach((ip, i) => insertAddress(other, ip, i + 1)))();
    const present = () => ips.filter((ip) => sync.index.slotOf(parseIp(ip)) !== NOT_FOUND).length;
    expect(sync.followSome(10)).toEqual({ changed: 10, more: true });
    expect(present()).toBe(10);
    expect(sync.followSome(10)).toEqual({ changed: 10, more: true });
    expect(sync.followSome(10)).toEqual({ changed: 5, more: false });
    expect(present()).toBe(25);
    // Caught up: the next catchUp reads nothing.
    expect(sync.catchUp()).toBe(0);
  }));

test("a running server takes another process's large commit in slices between turns of the event loop", () =>
  withTwoConnections(async (store, other, dir) => {
    const services = await createServices({ config: { ...defaultConfig(), dataDir: dir }, clock: systemClock, store });
    try {
      const ips = Array.from({ length: 5000 }, (_, i) => `45.35.${i >> 8}.${i & 255}`);
      other.sqlite.transaction(() => ips.forEach((ip) => insertAddress(other, ip, 2)))();
      const present = () => ips.filter((ip) => services.index.slotOf(parseIp(ip)) !== NOT_FOUND).length;
      services.changes.poll();
      // The first slice is taken at once; the rest after other work had its turn.
      const atOnce = present();
      expect(atOnce).toBeGreaterThan(0);
      expect(atOnce).toBeLessThan(ips.length);
      for (let i = 0; i < 200 && present() < ips.length; i++) await Bun.sleep(5);
      expect(present()).toBe(ips.length);
    } finally {
      await services.stop();
    }
  }));

test("pruning a long log takes it in chunks, oldest first, never past what the index reflects", () =>
  withTwoConnections((store, other) => {
    const sync = IndexSync.build(store, DEFAULT_RISK_THRESHOLDS);
    const count = PRUNE_CHUNK + 5_000;
    const ipOf = (i: number) => `45.${36 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
    other.sqlite.transaction(() => {
      for (let i = 0; i < count; i++) insertAddress(other, ipOf(i), 1);
    })();
    const logged = () => (store.sqlite.query("SELECT count(*) AS n FROM address_change_log").get() as { n: number }).n;
    // Not yet followed: nothing goes.
    sync.prune();
    expect(logged()).toBe(count);
    sync.follow();
    sync.prune();
    expect(logged()).toBe(count - PRUNE_CHUNK);
    sync.prune();
    expect(logged()).toBe(0);
  }));

test("a process without the index file (jobs run) leaves the log to the server: its own entries stay until the server follows them", async () => {
  const dir = mkdtempSync(join(tmpdir(), "abuse-intel-catch-up-"));
  dirs.push(dir);
  const config = { ...defaultConfig(), dataDir: dir };
  const serverStore = openStore(dir);
  const cliStore = openStore(dir);
  const server = await createServices({ config, clock: systemClock, store: serverStore, indexFile: join(dir, "index.bin") });
  const cli = await createServices({ config, clock: systemClock, store: cliStore, webhookDispatcher: { autoStart: false } });
  // The server looks for other processes' commits only when told here: the race below (the job's housekeeping
  // tick before the server's next look, 500 ms apart at most in a real run) is then certain, not occasional.
  server.changes.stop();
  try {
    // The job writes an address row (the trigger logs it), as rescore, verify and expire do.
    insertAddress(cliStore, "45.33.7.7", 3);
    const seq = lastChangeSeq(cliStore);
    // A housekeeping tick of the job's process (every 2 s) passes before the server looks.
    await Bun.sleep(2_500);
    expect(cliStore.sqlite.query("SELECT count(*) AS n FROM address_change_log WHERE seq = ?").get(seq)).toEqual({ n: 1 });
    expect(server.changes.poll()).toBe(true);
    server.indexSync.catchUp();
    expect(server.index.slotOf(parseIp("45.33.7.7"))).not.toBe(NOT_FOUND);
  } finally {
    await cli.stop();
    await server.stop();
    cliStore.close();
    serverStore.close();
  }
});
