// An imported ASN table (`geo import`) may carry an organization name of any length: a never-reported address's
// answer is then megabytes long, and it is sent whole, single and in a bulk check. (An answer written as bytes
// is named by start * 2^21 + length, reputation.ts's SPAN_UNIT: one of 2 MiB or more goes as text.)

import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { importGeoFile } from "../../src/services/enrichment/geo-import";

let h: Harness;
let user: TestUser;
const LONG = `Example ${"x".repeat(2_100_000)} Networks`;

beforeAll(async () => {
  h = await createHarness();
  user = await addUser(h, { tier: "enterprise" });
  const file = join(h.dataDir, "asn.csv");
  writeFileSync(file, `198.18.200.0,198.18.200.255,64500,"${LONG}"\n8.8.8.0,8.8.8.255,64501,"${LONG}"\n`);
  await importGeoFile(file, { dataDir: h.dataDir, dataTime: Date.now() + 86_400_000 });
  // The running server picks the import up on its housekeeping timer (every 2 s).
  for (let i = 0; i < 50; i++) {
    const detail = (await (await h.call("GET", "/v1/ip/8.8.8.9", { headers: user.apiKey })).json()) as { isp: string | null };
    if (detail.isp === LONG) return;
    await Bun.sleep(100);
  }
  throw new Error("the import was not picked up");
});
afterAll(() => h.close());

test("a never-reported address whose owner's name is over 2 MiB gets its whole answer", async () => {
  const res = await h.call("GET", "/v1/ip/8.8.8.9/reputation", { headers: user.apiKey });
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text.startsWith('{"success":true,"data":{"ipAddress":"8.8.8.9"')).toBe(true);
  expect(JSON.parse(text).data).toMatchObject({ ipAddress: "8.8.8.9", isp: LONG, cached: false });
});

test("the same in a bulk check", async () => {
  const res = await h.call("POST", "/v1/ip/bulk", { headers: user.apiKey, json: { ips: ["8.8.8.10", "1.1.1.1"] } });
  expect(res.status).toBe(200);
  const body = JSON.parse(await res.text());
  expect(body.data.results.map((r: { ipAddress: string; isp: string }) => [r.ipAddress, r.isp === LONG])).toEqual([
    ["8.8.8.10", true],
    ["1.1.1.1", false],
  ]);
});
