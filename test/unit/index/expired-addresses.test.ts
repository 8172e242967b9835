// ReputationIndex.expiredAddresses: the addresses whose first counting report is older than a cutoff, found by a
// scan of the slots through a map from slot to address made on first need and kept by upsert and remove. Checked
// against a plain model over random steps: addresses of both families come, change and go, networks share the
// slots, and freed slots are taken again.

import { expect, test } from "bun:test";
import { type Ip, ipFromWords, ipv4FromNumber, parseCidr } from "../../../src/domain/ip";
import { type AddressRecord, ReputationIndex } from "../../../src/index/reputation-index";
import { rng } from "../../support/random";

const record = (firstSeenMs: number): AddressRecord => ({
  reputationScore: 50,
  totalReports: 1,
  verifiedReports: 0,
  categoriesMask: 1,
  lastCategoryBit: 0,
  firstSeenMs,
  lastSeenMs: firstSeenMs,
});

test("expiredAddresses agrees with a model over random upserts, removes and networks", () => {
  const random = rng(11);
  // A small start, so the columns (and the map made at the first look) grow as slots are taken.
  const index = new ReputationIndex(undefined, 16);
  const model = new Map<string, { ip: Ip; firstSeen: number }>();
  const pool: Ip[] = [];
  for (let i = 0; i < 300; i++) {
    pool.push(i % 3 === 0 ? ipFromWords([0x20010db8, 0, random() & 0xffff, random()]) : ipv4FromNumber(0x0a000000 + (random() % 5000)));
  }
  for (let step = 0; step < 20_000; step++) {
    const ip = pool[random() % pool.length];
    const action = random() % 10;
    if (action < 6) {
      const first = random() % 1_000_000;
      index.upsert(ip, record(first));
      model.set(ip.text, { ip, firstSeen: first });
    } else if (action < 9) {
      index.remove(ip);
      model.delete(ip.text);
    } else {
      // A listed network (a listing's record has no firstSeen) takes a slot too.
      index.upsertNetwork(parseCidr(`10.${random() % 200}.0.0/16`), record(Number.NaN));
    }
    if (step % 500 === 0) {
      const cutoff = random() % 1_000_000;
      const got = index.expiredAddresses(cutoff).map((a) => a.text).sort();
      const want = [...model.values()].filter((e) => e.firstSeen < cutoff).map((e) => e.ip.text).sort();
      expect(got).toEqual(want);
      const rest = [...model.values()].filter((e) => e.firstSeen >= cutoff).map((e) => e.firstSeen);
      expect(index.earliestFirstSeen).toBe(rest.length === 0 ? Number.POSITIVE_INFINITY : Math.min(...rest));
    }
  }
});
