// fail2ban reports to the appliance unchanged (issue 13): Debian's fail2ban runs for real with its shipped
// `abuseipdb` action, only the URL pointed at the appliance; failed logins get the address banned, and the ban
// is a report the appliance scores, with the mapped categories, credited to the API key's account. A second ban
// within 15 minutes gets the 429 that fail2ban logs. The request the action sends, as captured from a real run
// (test/fixtures/fail2ban/), is also replayed as is, so the wire check holds where fail2ban cannot run.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { addUser, type TestUser } from "../support/accounts";
import { Fail2ban, fail2banInstalled, JAIL } from "../support/fail2ban";
import { createHarness, type Harness } from "../support/harness";
import { FIREWALL_TESTS_REQUIRED } from "../support/netns";

const captured = JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/fail2ban/abuseipdb-request.json"), "utf8")) as {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
};

const installed = fail2banInstalled();
if (!installed) {
  if (FIREWALL_TESTS_REQUIRED) throw new Error("fail2ban is not installed, and ABUSE_INTEL_FIREWALL_TESTS=required");
  console.warn("the fail2ban test is skipped: Debian's fail2ban is not installed (apt-get install fail2ban)");
}

let h: Harness;
let owner: TestUser;
beforeAll(async () => {
  h = await createHarness();
  owner = await addUser(h, { tier: "enterprise" });
});
afterAll(async () => {
  await h.close();
});

const reputation = async (ip: string) =>
  ((await (await h.call("GET", `/v1/ip/${ip}/reputation`, { headers: owner.apiKey })).json()) as { data: { totalReports: number; categories: string[] } }).data;
const balance = async () => ((await (await h.call("GET", "/v1/credits/balance", { headers: owner.jwt })).json()) as { data: { balance: number } }).data.balance;

describe("the request fail2ban's shipped action sends", () => {
  test("replayed as captured: 200 with the AbuseIPDB report answer", async () => {
    const headers = { ...captured.headers, key: owner.key };
    delete (headers as Record<string, string>)["user-agent"];
    const res = await fetch(`${h.url}${captured.path}`, { method: captured.method, headers, body: captured.body });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { ipAddress: string; abuseConfidenceScore: number } };
    expect(body.data.ipAddress).toBe("203.0.113.50");
    expect(typeof body.data.abuseConfidenceScore).toBe("number");
    const data = await reputation("203.0.113.50");
    expect([...data.categories].sort()).toEqual(["BRUTE_FORCE", "SSH"]);
  });
});

describe.skipIf(!installed)("Debian's fail2ban with the shipped abuseipdb action", () => {
  test("a ban becomes a credited report with the mapped categories; a second within 15 minutes is the 429 fail2ban logs", async () => {
    const ip = "198.51.100.200";
    const before = await balance();
    const f2b = await Fail2ban.start({ reportUrl: `${h.url}/api/v2/report`, apiKey: owner.key, categories: "18,22" });
    try {
      f2b.fail(ip, 3);
      await f2b.waitForLog(new RegExp(`Ban ${ip.replaceAll(".", "\\.")}`), 20_000);
      const deadline = Date.now() + 60_000;
      while ((await reputation(ip)).totalReports === 0 && Date.now() < deadline) await Bun.sleep(100);
      const data = await reputation(ip);
      expect(data.totalReports).toBe(2);
      expect([...data.categories].sort()).toEqual(["BRUTE_FORCE", "SSH"]);
      expect((await balance()) - before).toBe(2);

      // Unban and ban again at once: the appliance answers 429 and fail2ban logs the failed action.
      expect((await f2b.client("set", JAIL, "unbanip", ip)).status).toBe(0);
      expect((await f2b.client("set", JAIL, "banip", ip)).status).toBe(0);
      // curl -f turns the 429 into exit status 22, which fail2ban logs as a failed ban action.
      await f2b.waitForLog(/returned 22[\s\S]*Failed to execute ban jail 'appliance-test' action 'abuseipdb'/, 20_000);
      expect((await reputation(ip)).totalReports).toBe(2);
    } finally {
      await f2b.stop();
    }
  }, 90_000);
});
