// The index file on a real file: what is written reads back as the same index (addresses of both families, listed
// networks, freed slots, the addresses to drop, the stamp); any damaged section, a cut file or a foreign file
// is refused with IndexFileProblem, never read as an index.

import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCidr, parseIp } from "../../../src/domain/ip";
import { DEFAULT_RISK_THRESHOLDS } from "../../../src/domain/risk";
import { IndexFileProblem, openIndexFile, writeIndexFile } from "../../../src/index/index-file";
import { NOT_FOUND } from "../../../src/index/radix-common";
import { type AddressRecord, ReputationIndex } from "../../../src/index/reputation-index";
import { rng } from "../../support/random";

const dir = mkdtempSync(join(tmpdir(), "abuse-intel-index-file-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = (score: number, total: number): AddressRecord => ({
  reputationScore: score,
  totalReports: total,
  verifiedReports: total >> 1,
  categoriesMask: (1 << (total % 16)) | 1,
  lastCategoryBit: total % 16,
  firstSeenMs: 1_700_000_000_000 + total,
  lastSeenMs: total % 7 === 0 ? Number.NaN : 1_700_000_100_000 + total,
});

function sampleIndex(): { index: ReputationIndex; addresses: string[] } {
  const next = rng(11);
  const index = new ReputationIndex(DEFAULT_RISK_THRESHOLDS, 16);
  const addresses: string[] = [];
  for (let i = 0; i < 3000; i++) {
    const r = next();
    const text = i % 5 === 4 ? `2600:3c00:${(r & 0xffff).toString(16)}::${(i + 1).toString(16)}` : `${1 + (r % 200)}.${(r >>> 8) & 255}.${(r >>> 16) & 255}.${i % 250}`;
    if (addresses.includes(text)) continue;
    addresses.push(text);
    index.upsert(parseIp(text), record(r % 101, 1 + (r % 40)));
  }
  // Freed slots below the highest one in use, and listed networks.
  for (const text of addresses.splice(0, 200)) index.remove(parseIp(text));
  index.upsertNetwork(parseCidr("23.94.0.0/24"), record(10, 3));
  index.upsertNetwork(parseCidr("2600:3c01::/48"), record(20, 4));
  return { index, addresses };
}

const stamp = { token: "a-token", seq: 4242, schema: "a-migration-hash" };

describe("the index file", () => {
  test("reads back the index it was written from: every entry, network and free slot, the dropped list and the stamp", () => {
    const { index, addresses } = sampleIndex();
    const path = join(dir, "round-trip.bin");
    writeIndexFile(path, stamp, DEFAULT_RISK_THRESHOLDS, { parts: index.persistedParts(), dropped: [addresses[0], addresses[4]] });
    const reader = openIndexFile(path);
    expect(reader.stamp).toEqual(stamp);
    expect(reader.thresholds).toEqual(DEFAULT_RISK_THRESHOLDS);
    const { parts, dropped } = reader.read();
    expect(dropped).toEqual([addresses[0], addresses[4]]);
    // 200 removed, two taken again by the networks.
    expect(parts.freeSlots.length).toBe(198);
    const loaded = ReputationIndex.fromParts(parts);
    expect(loaded.size).toBe(index.size);
    expect(loaded.networkCount).toBe(2);
    for (const text of addresses) {
      const ip = parseIp(text);
      expect(loaded.record(loaded.slotOf(ip))).toEqual(index.record(index.slotOf(ip)));
    }
    expect(loaded.record(loaded.answerSlotOf(parseIp("23.94.0.77")))).toEqual(index.record(index.answerSlotOf(parseIp("23.94.0.77"))));
    // Freed slots are used again before the columns grow.
    const columnLength = loaded.score.length;
    loaded.upsert(parseIp("9.9.9.9"), record(50, 2));
    expect(loaded.score.length).toBe(columnLength);
    expect(loaded.record(loaded.slotOf(parseIp("9.9.9.9")))).toEqual(record(50, 2));
    expect(loaded.removeAllNetworks()).toBe(2);
    expect(loaded.answerSlotOf(parseIp("23.94.0.77"))).toBe(NOT_FOUND);
    expect(loaded.answerSlotOf(parseIp("2600:3c01::5"))).toBe(NOT_FOUND);
  });

  test("an empty index round-trips", () => {
    const path = join(dir, "empty.bin");
    writeIndexFile(path, stamp, DEFAULT_RISK_THRESHOLDS, { parts: new ReputationIndex().persistedParts(), dropped: [] });
    const reader = openIndexFile(path);
    const loaded = ReputationIndex.fromParts(reader.read().parts);
    expect(loaded.size).toBe(0);
  });

  test("a byte changed anywhere in the data, a cut file or a foreign file is refused", () => {
    const { index } = sampleIndex();
    const path = join(dir, "spoiled.bin");
    writeIndexFile(path, stamp, DEFAULT_RISK_THRESHOLDS, { parts: index.persistedParts(), dropped: ["1.2.3.4"] });
    const good = readFileSync(path);
    let copies = 0;
    const refused = (bytes: Uint8Array): boolean => {
      // A new file each time: an earlier one may still be mapped.
      const copy = join(dir, `spoiled-${++copies}.bin`);
      writeFileSync(copy, bytes);
      try {
        openIndexFile(copy).read();
        return false;
      } catch (error) {
        expect(error).toBeInstanceOf(IndexFileProblem);
        return true;
      }
    };
    expect(refused(good)).toBe(false);
    // Every 997th byte: the header and each section. Only the zeros that align sections may change unnoticed.
    let tried = 0;
    let refusedCount = 0;
    for (let at = 0; at < good.byteLength; at += 997) {
      const spoiled = Buffer.from(good);
      spoiled[at] ^= 0x5a;
      tried++;
      if (refused(spoiled)) refusedCount++;
      else expect(good[at]).toBe(0);
    }
    expect(refusedCount).toBeGreaterThan(tried * 0.95);
    expect(refused(good.subarray(0, good.byteLength - 1))).toBe(true);
    expect(refused(good.subarray(0, 20))).toBe(true);
    expect(refused(Buffer.from("SQLite format 3\0 and so on and so forth"))).toBe(true);
  });
});
