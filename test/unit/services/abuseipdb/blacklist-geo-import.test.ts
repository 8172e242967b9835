// The blacklist keeps its countries per index state; a geo import that a running server picks up must still show in
// the next answer, though the index has not changed (the list is made again when the enrichment's tables change).

import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../../../src/domain/clock";
import { ipv4FromNumber } from "../../../../src/domain/ip";
import { CidrSet } from "../../../../src/index/cidr-set";
import { ReputationIndex } from "../../../../src/index/reputation-index";
import { Blacklist } from "../../../../src/services/abuseipdb/blacklist";
import { openEnrichment } from "../../../../src/services/enrichment/enrichment";
import { importGeoFile } from "../../../../src/services/enrichment/geo-import";

const scratch = mkdtempSync(join(tmpdir(), "blacklist-geo-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test("a geo import picked up by the running enrichment changes the countries of the next answer", async () => {
  const enrichment = await openEnrichment({ dataDir: scratch });
  const index = new ReputationIndex();
  const now = Date.parse("2026-11-21T08:00:00Z");
  index.upsert(ipv4FromNumber(0x08080808), { reputationScore: 0, totalReports: 1, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now });
  const blacklist = new Blacklist({ index, allowlist: { set: new CidrSet(), onChange: () => {} }, enrichment, clock: new ManualClock(now), expireDue: () => {} });
  const country = async () => {
    const { body } = blacklist.answer({ confidenceMinimum: 100, limit: 10, ipVersion: null, onlyCountries: null, exceptCountries: null, plaintext: false });
    return (JSON.parse(new TextDecoder().decode(body as Uint8Array)) as { data: { countryCode: string }[] }).data[0].countryCode;
  };
  expect(await country()).toBe("US");
  const csv = join(scratch, "de.csv");
  writeFileSync(csv, "8.8.8.0,8.8.8.255,DE\n");
  await importGeoFile(csv, { dataDir: scratch });
  expect(enrichment.reloadImported()).toBe(true);
  expect(await country()).toBe("DE");
  expect(blacklist.walks).toBe(2);
});
