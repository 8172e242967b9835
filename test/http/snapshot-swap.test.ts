// An edge swapping in a new snapshot (issue 29): the snapshot's blobs read on a worker thread, which also checks
// the trees' links and counts their networks; the range tables of the snapshot served until then kept (with the
// merged geo table built for them) when the new snapshot carries the same; and the answers equal a snapshot opened
// on one thread at once. Through createSnapshotServices, what `serve --follow` calls on each swap.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../src/config";
import { parseIp } from "../../src/domain/ip";
import { createSnapshotServices, type SnapshotServices } from "../../src/app/snapshot-services";
import { Enrichment } from "../../src/services/enrichment/enrichment";
import { exportSnapshot } from "../../src/services/snapshots/export";
import { readSnapshotBlobsInWorker } from "../../src/services/snapshots/snapshot-blobs";
import { openSnapshot } from "../../src/services/snapshots/sources";
import { addUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

const KEY = "static-key-for-the-edge-box-0123456789";
const ADDRESSES = ["203.0.113.7", "198.51.100.1", "2001:db8::42"];
const LISTED = ["192.0.2.0/24", "192.0.2.77", "2001:db8:1::/48"];

let h: Harness;
let dir: string;
let file: string;
let served: SnapshotServices;
const open = (snapshot: string, previousEnrichment?: Enrichment) =>
  createSnapshotServices({ config: { ...defaultConfig(), dataDir: dir, snapshot, apiKeys: [KEY] }, clock: h.clock, previousEnrichment });
const close = async (s: SnapshotServices) => {
  await s.stop();
  s.store.close();
};

beforeAll(async () => {
  h = await createHarness();
  const admin = await addUser(h, { tier: "enterprise", role: "admin" });
  const reporter = await addUser(h, { tier: "enterprise" });
  for (const ip of ADDRESSES) expect((await h.call("POST", "/v1/ip/report", { headers: reporter.jwt, json: { ip, category: "ssh", severity: 3 } })).status).toBe(201);
  const listed = await h.call("POST", "/v1/admin/feeds/drop?category=SPAM", { headers: { ...admin.jwt, "content-type": "text/plain" }, body: LISTED.join("\n") + "\n" });
  expect(listed.status).toBeLessThan(300);
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-snapswap-"));
  file = join(dir, "s.sqlite");
  await exportSnapshot({ store: h.store, services: h.services, out: file, nowMs: h.clock.now() });
  served = await open(file);
});

afterAll(async () => {
  await close(served);
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("swapping in a snapshot", () => {
  test("its blobs come from a worker thread with the trees' links checked and their networks counted", async () => {
    const blobs = await readSnapshotBlobsInWorker(file);
    const atOnce = openSnapshot(file);
    try {
      expect(blobs).not.toBeNull();
      expect(blobs!.linksChecked).toBe(true);
      expect(blobs!.networkCount).toBe(atOnce.index.networkCount);
      expect(blobs!.networkCount).toBe(2); // the two networks of LISTED (the /32 is an address)
      expect(blobs!.index.map((b) => b.name)).toContain("v4");
      expect(blobs!.ranges.length).toBe(atOnce.enrichment().rangeTables().length);
    } finally {
      atOnce.close();
    }
  });

  test("the next snapshot answers as one opened at once, and keeps the served one's enrichment when its tables are the same", async () => {
    const next = await open(file, served.enrichment);
    const atOnce = openSnapshot(file);
    try {
      expect(next.enrichment).toBe(served.enrichment);
      expect(next.index.networkCount).toBe(atOnce.index.networkCount);
      expect(next.index.size).toBe(atOnce.index.size);
      for (const ip of [...ADDRESSES, "192.0.2.5", "192.0.2.77", "2001:db8:1::9", "8.8.8.8"]) {
        expect(next.reputation.scoreOf(parseIp(ip))).toEqual(atOnce.reputation.scoreOf(parseIp(ip)));
      }
    } finally {
      atOnce.close();
      await close(next);
    }
  });

  test("an enrichment with other tables is not kept", async () => {
    const builtIn = served.enrichment.rangeTables()[0].table;
    const other = new Enrichment(builtIn, [{ name: "imported", table: builtIn }]);
    const next = await open(file, other);
    try {
      expect(next.enrichment).not.toBe(other);
      expect(next.enrichment.rangeTables().length).toBe(served.enrichment.rangeTables().length);
    } finally {
      await close(next);
    }
  });

  test("a snapshot whose tree links point outside the tree is refused, as when opened at once", async () => {
    const damaged = join(dir, "damaged.sqlite");
    copyFileSync(file, damaged);
    const db = new Database(damaged);
    const { bytes } = db.query("SELECT bytes FROM index_data WHERE name = 'v4'").get() as { bytes: Uint8Array };
    const words = new Int32Array(bytes.slice().buffer);
    // Preamble: magic, version, rootBits, header length 3, count, top, fixedRoot, array count 3, 3 lengths; then the roots.
    words[11] = 0x7fffff00;
    db.query("UPDATE index_data SET bytes = ? WHERE name = 'v4'").run(new Uint8Array(words.buffer));
    db.close();
    expect(await readSnapshotBlobsInWorker(damaged)).toBeNull();
    await expect(open(damaged, served.enrichment)).rejects.toThrow(/root points outside the nodes/);
    expect(() => openSnapshot(damaged)).toThrow(/root points outside the nodes/);
  });
});
