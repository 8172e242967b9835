// The background checkpointer: the log is copied into the database file by its worker while the server's
// connection keeps committing, the connection checkpoints itself only past the safety net, and stop() ends it.

import { Database } from "bun:sqlite";
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databasePath, inTransaction, openStore, type Store } from "../../../src/store/database";
import { SAFETY_NET_PAGES, startWalCheckpointer } from "../../../src/store/wal-checkpointer";

let dir: string;
let store: Store;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-checkpoint-"));
  store = openStore(dir);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const autocheckpoint = () => (store.sqlite.query("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number }).wal_autocheckpoint;

function writeRows(from: number, count: number): void {
  const insert = store.sqlite.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
  for (let i = from; i < from + count; i += 100) {
    inTransaction(store, () => {
      for (let j = i; j < i + 100; j++) insert.run(`key-${j}`, "x".repeat(500));
    });
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await Bun.sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

test("the worker copies the log into the database file; the connection's own checkpoint waits for the safety net", async () => {
  expect(autocheckpoint()).toBe(1000);
  const checkpointer = await startWalCheckpointer(store, { intervalMs: 5 });
  try {
    expect(autocheckpoint()).toBe(SAFETY_NET_PAGES);
    const before = statSync(databasePath(dir)).size;
    writeRows(0, 5_000);
    await until(() => checkpointer.stats.framesCopied > 500, "the worker to copy frames");
    // The rows reached the database file itself, not only the log.
    await until(() => statSync(databasePath(dir)).size > before + 2_000_000, "the database file to grow");
    expect(checkpointer.stats.checkpoints).toBeGreaterThan(0);
    // Another connection sees every row.
    const other = new Database(databasePath(dir), { readonly: true });
    expect((other.query("SELECT count(*) AS n FROM meta WHERE key LIKE 'key-%'").get() as { n: number }).n).toBe(5_000);
    other.close();
  } finally {
    await checkpointer.stop();
  }
  expect(autocheckpoint()).toBe(1000);
});

test("after stop() nothing is copied in the background any more; stopping twice is harmless", async () => {
  const checkpointer = await startWalCheckpointer(store, { intervalMs: 5 });
  writeRows(0, 1_000);
  await until(() => checkpointer.stats.framesCopied > 0, "the worker to copy frames");
  await checkpointer.stop();
  await checkpointer.stop();
  const copied = checkpointer.stats.framesCopied;
  writeRows(1_000, 1_000);
  await Bun.sleep(50);
  expect(checkpointer.stats.framesCopied).toBe(copied);
  expect(autocheckpoint()).toBe(1000);
  expect((store.sqlite.query("SELECT count(*) AS n FROM meta WHERE key LIKE 'key-%'").get() as { n: number }).n).toBe(2_000);
});

test("a worker that cannot open the database fails the start and leaves the connection's own checkpoint as it was", async () => {
  const elsewhere = { ...store, path: join(dir, "missing", "abuse-intel.db") };
  await expect(startWalCheckpointer(elsewhere, { intervalMs: 5 })).rejects.toThrow();
  expect(autocheckpoint()).toBe(1000);
});
