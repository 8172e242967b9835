// Debian's Postfix uses the appliance's DNS blocklist (issue 26, contract 17) with nothing but the zone in its
// configuration: in a network namespace this test creates, the built executable answers DNS on port 53 of the
// namespace's loopback, Postfix's resolver asks it (/etc/netns/NAME/resolv.conf), and swaks sends mail from
// documentation addresses on that loopback. A client reported through the API until HIGH, or inside a network a
// feed lists, is refused with a 5xx naming the zone; an unlisted one is accepted; once allowlisted through the API
// the next mail from it is accepted. The code filters of the README ("critical only" 127.0.2.4, "spam only"
// 127.0.1.11) let through what they should, and so does postscreen with the README's weights. The main.cf lines
// are the README's, word for word (its postscreen block is read from it).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ipv4Name } from "../support/dns";
import { FIREWALL_TESTS_REQUIRED, NetworkNamespace, toolRunsIn } from "../support/netns";
import { PostfixInNamespace, postfixInstalled } from "../support/postfix";
import { createSandbox, type Sandbox } from "./support/binary";
import { NamespacedServer } from "./support/namespaced-server";

const ZONE = "dnsbl.abuse-intel.internal";
/** The README's lines ("Using the DNS blocklist"), the ones Postfix runs here. */
const REJECT_LISTED = `smtpd_client_restrictions = reject_rbl_client ${ZONE}`;
const REJECT_CRITICAL = `smtpd_client_restrictions = reject_rbl_client ${ZONE}=127.0.2.4`;
const REJECT_SPAM = `smtpd_client_restrictions = reject_rbl_client ${ZONE}=127.0.1.11`;
const PORTS = { listed: 25, critical: 2525, spam: 2526, postscreen: 2527 };

const README = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
/** The README's section on the DNS blocklist. */
function readmeSection(): string {
  const start = README.indexOf("### Using the DNS blocklist");
  if (start < 0) throw new Error("README.md has no section \"Using the DNS blocklist\"");
  return README.slice(start, README.indexOf("\n### ", start + 1));
}
/** The README's postscreen settings: the lines of its code block that sets postscreen_dnsbl_sites. */
function readmePostscreenLines(): string[] {
  const block = readmeSection()
    .split("```")
    .find((b) => b.includes("postscreen_dnsbl_sites ="));
  if (block === undefined) throw new Error("the README's DNS blocklist section has no postscreen_dnsbl_sites block");
  return block.split("\n").filter((line) => line.trim() !== "");
}

/** Reported as email spam by two users through the API: HIGH, not CRITICAL. */
const REPORTED_HIGH = "203.0.113.7";
/** Inside 203.0.113.64/26, which a feed lists (HACKING): HIGH. */
const IN_FEED_NETWORK = "203.0.113.66";
/** Listed by the feed and reported by both users: CRITICAL. */
const CRITICAL = "192.0.2.44";
/** Never reported. */
const UNLISTED = "198.51.100.9";

const installed = postfixInstalled();
if (!installed) {
  if (FIREWALL_TESTS_REQUIRED) throw new Error("postfix or swaks is not installed, and ABUSE_INTEL_FIREWALL_TESTS=required");
  console.warn("the Postfix DNSBL test is skipped: postfix or swaks is not installed");
}
const ns = installed ? NetworkNamespace.create("postfix") : null;
const ready =
  installed &&
  toolRunsIn(ns, "postconf", ["-d", "mail_version"], "the Postfix DNSBL test") &&
  toolRunsIn(ns, "swaks", ["--version"], "the Postfix DNSBL test") &&
  toolRunsIn(ns, "curl", ["--version"], "the Postfix DNSBL test");

let sandbox: Sandbox;
let appliance: NamespacedServer;
let postfix: PostfixInNamespace;
let adminToken: string;

beforeAll(async () => {
  if (!ready || ns === null) return;
  for (const client of [REPORTED_HIGH, IN_FEED_NETWORK, CRITICAL, UNLISTED]) ns.addLoopbackAddress(`${client}/32`);
  ns.useNameserver("127.0.0.1");
  sandbox = createSandbox();
  appliance = await NamespacedServer.start(ns, sandbox, 8080, ["--dns-port", "53"]);
  const admin = appliance.credentials();
  adminToken = await login(admin.email, admin.password);

  const feed = await appliance.request("POST", "/v1/admin/feeds/mail-test?category=HACKING&severity=5", {
    headers: { authorization: `Bearer ${adminToken}` },
    text: `203.0.113.64/26\n${CRITICAL}\n`,
  });
  expect(feed.status).toBeLessThan(300);
  const reporters: string[] = [];
  for (const n of [1, 2]) {
    const email = `reporter${n}@example.test`;
    const created = await appliance.request("POST", "/v1/admin/users", {
      headers: { authorization: `Bearer ${adminToken}` },
      json: { email, password: "reporter password 1234", tier: "free" },
    });
    expect(created.status).toBe(201);
    reporters.push(await login(email, "reporter password 1234"));
  }
  for (const ip of [REPORTED_HIGH, CRITICAL]) {
    for (const token of reporters) {
      const r = await appliance.request("POST", "/v1/ip/report", {
        headers: { authorization: `Bearer ${token}` },
        json: { ipAddress: ip, category: "SPAM", description: "spam run seen by the mail server", severity: 5 },
      });
      expect(r.status).toBe(201);
    }
  }

  postfix = await PostfixInNamespace.start(ns, [
    { port: PORTS.listed, clientRestrictions: REJECT_LISTED },
    { port: PORTS.critical, clientRestrictions: REJECT_CRITICAL },
    { port: PORTS.spam, clientRestrictions: REJECT_SPAM },
    { port: PORTS.postscreen, postscreen: true },
  ], readmePostscreenLines());
}, 120_000);

afterAll(async () => {
  await postfix?.stop();
  await appliance?.stop();
  ns?.destroy();
  sandbox?.cleanup();
});

async function login(email: string, password: string): Promise<string> {
  const r = await appliance.request("POST", "/v1/auth/login", { json: { email, password } });
  if (r.status !== 200) throw new Error(`login ${email}: ${r.status} ${r.text}`);
  return r.body.data.accessToken;
}

async function riskLevel(ip: string): Promise<string> {
  const r = await appliance.request("GET", `/v1/ip/${ip}/reputation`, { headers: { authorization: `Bearer ${adminToken}` } });
  return r.body?.data?.riskLevel;
}

/** Sends one mail and fails with Postfix's and the appliance's logs when the outcome is not `expected`. */
function expectMail(client: string, port: number, expected: "accepted" | "rejected") {
  const outcome = postfix.send(client, port);
  const got = outcome.accepted ? "accepted" : "rejected";
  if (got !== expected) {
    throw new Error(`mail from ${client} to port ${port} was ${got}, expected ${expected}:\n${outcome.transcript}\n--- maillog\n${postfix.log()}\n--- appliance\n${appliance.log().slice(-3000)}`);
  }
  return outcome;
}

describe.skipIf(!ready)("Debian's Postfix with reject_rbl_client on the appliance's zone, in a network namespace", () => {
  test("the data: HIGH through the API, HIGH by a feed's network, CRITICAL, never reported", async () => {
    expect(await riskLevel(REPORTED_HIGH)).toBe("HIGH");
    expect(await riskLevel(IN_FEED_NETWORK)).toBe("HIGH");
    expect(await riskLevel(CRITICAL)).toBe("CRITICAL");
    // The codes the filters below test, as dig reads them on the resolver Postfix uses.
    const codes = (ip: string) =>
      ns!.run("dig", ["+short", "@127.0.0.1", ipv4Name(ip, ZONE), "A"]).stdout.trim().split("\n").filter(Boolean).sort();
    expect(codes(REPORTED_HIGH)).toEqual(["127.0.0.2", "127.0.1.10", "127.0.1.11", "127.0.1.12", "127.0.2.3"]);
    expect(codes(IN_FEED_NETWORK)).toEqual(["127.0.0.2", "127.0.1.1", "127.0.1.15", "127.0.2.3"]);
    expect(codes(UNLISTED)).toEqual([]);
  }, 60_000);

  test("a listed client is refused with a 5xx that names the zone; an unlisted one is accepted", () => {
    for (const client of [REPORTED_HIGH, IN_FEED_NETWORK, CRITICAL]) {
      const refused = expectMail(client, PORTS.listed, "rejected");
      expect(refused.rejection).toMatch(new RegExp(`^5\\d\\d .*\\[${client.replace(/\./g, "\\.")}\\] blocked using ${ZONE.replace(/\./g, "\\.")}`));
    }
    const accepted = expectMail(UNLISTED, PORTS.listed, "accepted");
    expect(accepted.rejection).toBeNull();
  }, 120_000);

  test(`"critical only" (=127.0.2.4) lets HIGH through and refuses CRITICAL; "spam only" (=127.0.1.11) refuses spam, not the rest`, () => {
    expectMail(REPORTED_HIGH, PORTS.critical, "accepted");
    expectMail(IN_FEED_NETWORK, PORTS.critical, "accepted");
    expect(expectMail(CRITICAL, PORTS.critical, "rejected").rejection).toMatch(/^5\d\d .*blocked using dnsbl\.abuse-intel\.internal/);
    expectMail(UNLISTED, PORTS.critical, "accepted");

    expect(expectMail(REPORTED_HIGH, PORTS.spam, "rejected").rejection).toMatch(/^5\d\d .*blocked using dnsbl\.abuse-intel\.internal/);
    expectMail(IN_FEED_NETWORK, PORTS.spam, "accepted");
  }, 120_000);

  test("postscreen with the README's weights: CRITICAL (3 + 1) and a HIGH spammer (2 + 1) refused, another HIGH (1) passes", () => {
    for (const client of [CRITICAL, REPORTED_HIGH]) {
      expect(expectMail(client, PORTS.postscreen, "rejected").rejection).toMatch(
        new RegExp(`^5\\d\\d .*\\[${client.replace(/\./g, "\\.")}\\] blocked using dnsbl\\.abuse-intel\\.internal`),
      );
    }
    expectMail(IN_FEED_NETWORK, PORTS.postscreen, "accepted");
    expectMail(UNLISTED, PORTS.postscreen, "accepted");
  }, 120_000);

  test("after the listed client is allowlisted through the API, its next mail is accepted", async () => {
    const allowed = await appliance.request("POST", "/v1/admin/allowlist", {
      headers: { authorization: `Bearer ${adminToken}` },
      json: { cidr: `${REPORTED_HIGH}/32`, note: "our own relay" },
    });
    expect(allowed.status).toBe(201);
    expectMail(REPORTED_HIGH, PORTS.listed, "accepted");
    // The others are still refused.
    expectMail(IN_FEED_NETWORK, PORTS.listed, "rejected");
  }, 120_000);

  test("the main.cf lines Postfix ran are the README's, word for word", () => {
    const lines = readmeSection().split("\n");
    for (const line of [REJECT_LISTED, REJECT_CRITICAL, REJECT_SPAM]) expect(lines).toContain(line);
  });
});
