// An edge's bouncer-cursors file survives restarts and upgrades (contract 14, docs/decisions.md "Edges": a swap or
// a restart must not send a bouncer the startup answer, since bouncers remove only what comes in `deleted`). Files
// written before each configured key had its own cursors hold them under `user0` (every key was user 0 then):
// the first pull after upgrading still gets the difference from them, with what left the list in `deleted`; so do
// files written before the journal (a cursor then held the ids it was sent), and a bouncer whose cursor was dropped
// (the journal's removal log, in the same file).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { createSnapshotServices } from "../../src/app/snapshot-services";
import { defaultConfig } from "../../src/config";
import { createApp } from "../../src/http/app";
import { listen } from "../../src/http/server";
import { exportSnapshot } from "../../src/services/snapshots/export";
import { EdgeCursorFile } from "../../src/store/edge-cursors";
import { v4DecisionId } from "../../src/domain/decisions";
import { parseIp } from "../../src/domain/ip";
import { type DecisionStream, pullDecisions } from "../support/decision-pull";
import { createHarness, type Harness } from "../support/harness";

const ipv4Value = (text: string) => (parseIp(text) as { value: number }).value;
const KEY = "static-key-for-the-edge-upgrade-0123456789";
const FROM = "127.0.0.1";

let h: Harness;
let dir: string;
let before: string;
let after: string;

beforeAll(async () => {
  h = await createHarness();
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-review-b-"));
  h.services.feeds.importText("lab", "198.51.100.7\n198.51.100.8\n", { category: "HACKING", severity: 4, replace: true });
  before = join(dir, "before.sqlite");
  await exportSnapshot({ store: h.store, services: h.services, out: before, nowMs: h.clock.now() });
  h.clock.advance(60_000);
  // 198.51.100.8 leaves the list.
  h.services.feeds.importText("lab", "198.51.100.7\n", { category: "HACKING", severity: 4, replace: true });
  after = join(dir, "after.sqlite");
  await exportSnapshot({ store: h.store, services: h.services, out: after, nowMs: h.clock.now() });
});
afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(snapshot: string, cursorFile: string) {
  const file = new EdgeCursorFile(cursorFile);
  const snap = await createSnapshotServices({ config: { ...defaultConfig(), dataDir: dir, snapshot, apiKeys: [KEY] }, clock: h.clock, bouncerCursors: file });
  const server: Server<undefined> = listen(snap, createApp(snap), { hostname: "127.0.0.1", port: 0 });
  return {
    port: server.port as number,
    close: async () => {
      server.stop(true);
      await snap.stop();
      file.close();
    },
  };
}

function pull(port: number, query = ""): Promise<DecisionStream> {
  h.clock.advance(1000);
  return pullDecisions(port, KEY, FROM, query);
}

/** A bouncer pulls the first snapshot (startup), the edge restarts, and the bouncer pulls the second. */
async function acrossRestart(cursorFile: string, betweenRestarts: () => void): Promise<DecisionStream> {
  const first = await serve(before, cursorFile);
  const startup = await pull(first.port, "startup=true");
  expect(startup.new.map((d) => d.value).sort()).toEqual(["198.51.100.7", "198.51.100.8"]);
  await first.close();
  betweenRestarts();
  const second = await serve(after, cursorFile);
  try {
    return await pull(second.port);
  } finally {
    await second.close();
  }
}

test("control: with a file written by this version, the pull after a restart deletes what left", async () => {
  const answer = await acrossRestart(join(dir, "now.sqlite"), () => {});
  expect(answer.deleted.map((d) => d.value)).toEqual(["198.51.100.8"]);
});

test("a cursors' file written by the version before the limits (rows `user0|<client>`) still tells the bouncer what left", async () => {
  const file = join(dir, "upgraded.sqlite");
  const answer = await acrossRestart(file, () => {
    // Make the row what the previous version wrote for the same pull: `${apiKeyId ?? `user${userId}`}|${client}`.
    const db = new Database(file);
    db.run(`UPDATE decision_cursors SET cursor_key = 'user0|${FROM}'`);
    db.close();
  });
  expect(answer.deleted.map((d) => d.value)).toEqual(["198.51.100.8"]);
  expect(answer.new).toEqual([]);
});

test("a bouncer whose cursor the edge dropped is told, after a swap and a restart, what left the list (the removal log in the cursors' file)", async () => {
  const file = join(dir, "removal-log.sqlite");
  const first = await serve(before, file);
  expect((await pull(first.port, "startup=true")).new.map((d) => d.value).sort()).toEqual(["198.51.100.7", "198.51.100.8"]);
  await first.close();
  // The swap: another bouncer's pull brings the journal up to the new snapshot (198.51.100.8 left).
  const second = await serve(after, file);
  expect((await pullDecisions(second.port, KEY, "127.0.0.2", "startup=true")).new.map((d) => d.value)).toEqual(["198.51.100.7"]);
  await second.close();
  // The first bouncer's cursor is dropped (as the per-key cap or idleness would), and the edge restarts.
  const db = new Database(file);
  db.run(`DELETE FROM decision_cursors WHERE cursor_key LIKE '%|${FROM}'`);
  db.close();
  const third = await serve(after, file);
  try {
    const answer = await pull(third.port);
    expect(answer.deleted.map((d) => d.value)).toEqual(["198.51.100.8"]);
    expect(answer.new.map((d) => d.value)).toEqual(["198.51.100.7"]);
  } finally {
    await third.close();
  }
}, 60_000);

test("a cursors' file written before the journal (the ids each bouncer was sent) still tells the bouncer what left", async () => {
  const file = join(dir, "before-journal.sqlite");
  // The file as the version before the journal wrote it for a bouncer sent 198.51.100.7 and .8.
  const ids = Float64Array.from(["198.51.100.7", "198.51.100.8"].map((ip) => v4DecisionId(ipv4Value(ip), 32)));
  const db = new Database(file, { create: true });
  db.run("CREATE TABLE decision_cursors (cursor_key TEXT PRIMARY KEY, last_pull_at INTEGER NOT NULL, ids BLOB NOT NULL, sent_at BLOB NOT NULL, v6_values TEXT NOT NULL)");
  db.run("INSERT INTO decision_cursors VALUES (?, ?, ?, ?, '{}')", [`user0|${FROM}`, h.clock.now(), new Uint8Array(ids.buffer), new Uint8Array(new Uint32Array([h.clock.now() / 1000, h.clock.now() / 1000]).buffer)]);
  db.close();
  const edge = await serve(after, file);
  try {
    const answer = await pull(edge.port);
    expect(answer.deleted.map((d) => d.value)).toEqual(["198.51.100.8"]);
    expect(await pull(edge.port)).toEqual({ new: [], deleted: [] });
  } finally {
    await edge.close();
  }
}, 60_000);
