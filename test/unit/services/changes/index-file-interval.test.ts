// A running server writes its index file on its interval while the index changes, not only at a clean stop: on a
// real data directory, the file appears after a rebuild, and after another connection's commit (followed through
// the change log) it is written again at the store's new position, holding the new address. An index unchanged
// since the last write is not written again.

import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServices } from "../../../../src/app/create-services";
import { defaultConfig } from "../../../../src/config";
import { systemClock } from "../../../../src/domain/clock";
import { parseIp } from "../../../../src/domain/ip";
import { openIndexFile } from "../../../../src/index/index-file";
import { ReputationIndex } from "../../../../src/index/reputation-index";
import { openStore } from "../../../../src/store/database";
import { lastChangeSeq } from "../../../../src/store/index-generation";

const dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-index-interval-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await Bun.sleep(100);
  }
}

test("the index file is written on its interval after a rebuild and after another connection's commit", async () => {
  const indexFile = join(dataDir, "index.bin");
  const store = openStore(dataDir);
  const services = await createServices({ config: { ...defaultConfig(), dataDir }, clock: systemClock, store, indexFile, indexFileIntervalMs: 2000 });
  try {
    await until(() => existsSync(indexFile), "the first write after the rebuild");
    const firstWrite = statSync(indexFile).mtimeMs;
    expect(openIndexFile(indexFile).read().parts.slots).toBe(0);

    const other = openStore(dataDir);
    const now = Date.now();
    other.sqlite
      .query(
        `INSERT INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
           first_seen, last_seen, scored_at, rescore_due_at) VALUES ('45.33.7.7', 4, 40, 3, 1, 2, 'BRUTE_FORCE', ?, ?, ?, NULL)`,
      )
      .run(now - 60_000, now - 1000, now);
    const seq = lastChangeSeq(other);
    other.close();

    await until(() => openIndexFile(indexFile).stamp.seq === seq, "a write at the new position");
    const written = openIndexFile(indexFile);
    const loaded = ReputationIndex.fromParts(written.read().parts);
    const slot = loaded.slotOf(parseIp("45.33.7.7"));
    expect(loaded.record(slot)).toEqual(services.index.record(services.index.slotOf(parseIp("45.33.7.7"))));
    expect(loaded.record(slot).totalReports).toBe(3);
    expect(statSync(indexFile).mtimeMs).toBeGreaterThan(firstWrite);

    // Nothing changed since: the next tick leaves the file as it is.
    const lastWrite = statSync(indexFile).mtimeMs;
    await Bun.sleep(2500);
    expect(statSync(indexFile).mtimeMs).toBe(lastWrite);
  } finally {
    await services.stop();
    store.close();
  }
}, 30_000);
