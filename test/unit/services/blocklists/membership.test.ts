// One address's membership (listingOfV4/V6, what the DNS blocklist asks per query) against the blocklist's walk
// (selectBlocklist): for random indexes of addresses and listed networks, random allowlists and every minimum
// level, an address is listed exactly when a line of the walk's list covers it.

import { describe, expect, test, setDefaultTimeout } from "bun:test";
import fc from "fast-check";
import { blocklistFilters } from "../../../../src/domain/blocklist/query";
import { cidrOf, ipFromWords, ipv4FromNumber, type Ip } from "../../../../src/domain/ip";
import { RISK_LEVELS } from "../../../../src/domain/risk";
import { CidrSet } from "../../../../src/index/cidr-set";
import { ReputationIndex } from "../../../../src/index/reputation-index";
import { selectBlocklist } from "../../../../src/services/blocklists/blocklist";
import { listingOfV4, listingOfV6, listingScratch } from "../../../../src/services/blocklists/membership";

// Hundreds of generated cases: room for a loaded machine (bun's default is 5 s).
setDefaultTimeout(30_000);

const BASE4 = 0x0a000000; // 10.0.0.0: entries and questions within 10.0.0.0/24
const record = (score: number, categoriesMask: number) => ({ reputationScore: score, totalReports: 1, verifiedReports: 0, categoriesMask, lastCategoryBit: 0, firstSeenMs: 0, lastSeenMs: 0 });
const entry = fc.record({ offset: fc.integer({ min: 0, max: 255 }), prefix: fc.constantFrom(32, 32, 32, 30, 28, 26, 24), score: fc.integer({ min: 0, max: 100 }), mask: fc.integer({ min: 0, max: 3 }) });
const allowed = fc.record({ offset: fc.integer({ min: 0, max: 255 }), prefix: fc.constantFrom(32, 30, 28) });

const v6 = (last: number): Ip => ipFromWords([0x20010db8, 0, 0, last]);

describe("listingOf agrees with selectBlocklist", () => {
  test("IPv4: addresses, nested listed networks, allowlisted networks, every level and a category filter", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 30 }), fc.array(allowed, { maxLength: 4 }), fc.constantFrom(...RISK_LEVELS), fc.constantFrom(0, 1, 2), (entries, allows, level, categoriesMask) => {
        const index = new ReputationIndex();
        for (const e of entries) {
          const ip = ipv4FromNumber(BASE4 + e.offset);
          if (e.prefix === 32) index.upsert(ip, record(e.score, e.mask));
          else index.upsertNetwork(cidrOf(ip, e.prefix), record(e.score, e.mask));
        }
        const allowlist = new CidrSet();
        allows.forEach((a, id) => allowlist.add(cidrOf(ipv4FromNumber(BASE4 + a.offset), a.prefix), id));
        const filters = blocklistFilters({ minimumRisk: level, categories: categoriesMask === 0 ? null : categoriesMask === 1 ? ["SPAM"] : ["BRUTE_FORCE"] });
        const selection = selectBlocklist(index, allowlist, filters);
        const covered = (value: number) => {
          for (let i = 0; i < selection.v4Count; i++) {
            const len = selection.v4Prefix === null ? 32 : selection.v4Prefix[i];
            const size = 2 ** (32 - len);
            if (value >= selection.v4[i] && value < selection.v4[i] + size) return true;
          }
          return false;
        };
        const out = listingScratch();
        for (let value = BASE4 - 1; value <= BASE4 + 256; value++) {
          expect({ value, listed: listingOfV4(index, allowlist, filters, value, out) }).toEqual({ value, listed: covered(value) });
        }
      }),
      { numRuns: 300 },
    );
  });

  test("IPv6 the same way", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 20 }), fc.array(allowed, { maxLength: 3 }), fc.constantFrom(...RISK_LEVELS), (entries, allows, level) => {
        const index = new ReputationIndex();
        for (const e of entries) {
          if (e.prefix === 32) index.upsert(v6(e.offset), record(e.score, e.mask));
          else index.upsertNetwork(cidrOf(v6(e.offset), e.prefix + 96), record(e.score, e.mask));
        }
        const allowlist = new CidrSet();
        allows.forEach((a, id) => allowlist.add(cidrOf(v6(a.offset), a.prefix + 96), id));
        const filters = blocklistFilters({ minimumRisk: level });
        const selection = selectBlocklist(index, allowlist, filters);
        const covered = (last: number) => {
          for (let i = 0; i < selection.v6Count; i++) {
            const len = selection.v6Prefix === null ? 128 : selection.v6Prefix[i];
            const first = selection.v6[4 * i + 3];
            if (selection.v6[4 * i] === 0x20010db8 && last >= first && last < first + 2 ** (128 - len)) return true;
          }
          return false;
        };
        const out = listingScratch();
        for (let last = 0; last <= 256; last++) {
          expect({ last, listed: listingOfV6(index, allowlist, filters, [0x20010db8, 0, 0, last], out) }).toEqual({ last, listed: covered(last) });
        }
      }),
      { numRuns: 200 },
    );
  });

  test("what a listed address's answer tells: the highest level and every category around it", () => {
    const index = new ReputationIndex();
    index.upsertNetwork(cidrOf(ipv4FromNumber(BASE4), 24), record(10, 1)); // CRITICAL, SPAM
    index.upsert(ipv4FromNumber(BASE4 + 5), record(60, 2)); // MEDIUM, BRUTE_FORCE: below HIGH itself
    const out = listingScratch();
    expect(listingOfV4(index, new CidrSet(), blocklistFilters({ minimumRisk: "HIGH" }), BASE4 + 5, out)).toBe(true);
    expect([out.risk, out.categories, out.slot]).toEqual([3, 3, index.slotOfV4(BASE4 + 5)]);
  });
});
