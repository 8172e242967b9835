// Debian's crowdsec-firewall-bouncer enforces the appliance's list in the kernel (issue 14), in a network
// namespace this test creates, in nftables mode and in ipset mode: HIGH addresses are dropped after the first
// pull; a new CRITICAL one within seconds; an allowlisted one stops being dropped; every address of a listed /24
// is dropped; and the bouncer keeps working across a restart of the appliance. Data goes in through the CLI on
// the appliance's data directory (a feed listing makes an address HIGH; three reporters' severity-5 reports,
// imported, make one CRITICAL).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApplianceInNamespace, BouncerInNamespace, bouncerInstalled } from "../support/crowdsec-bouncer";
import { FIREWALL_TESTS_REQUIRED, NetworkNamespace, toolRunsIn } from "../support/netns";

const ns = bouncerInstalled() ? NetworkNamespace.create("bouncer") : null;
const ready = bouncerInstalled() && toolRunsIn(ns, "nft", ["list", "tables"], "the CrowdSec bouncer test") && toolRunsIn(ns, "curl", ["--version"], "the CrowdSec bouncer test");
if (!bouncerInstalled()) {
  if (FIREWALL_TESTS_REQUIRED) throw new Error("crowdsec-firewall-bouncer is not installed, and ABUSE_INTEL_FIREWALL_TESTS=required");
  console.warn("the CrowdSec bouncer test is skipped: crowdsec-firewall-bouncer is not installed");
}

let dir: string;
let appliance: ApplianceInNamespace;
beforeAll(async () => {
  if (!ready || ns === null) return;
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-bouncer-test-"));
  appliance = new ApplianceInNamespace(ns, join(dir, "data"));
  feed("high", ["203.0.113.10", "203.0.113.11", "198.51.100.0/24"]);
  for (const n of [1, 2, 3]) {
    const r = appliance.cli("user", "add", "--email", `reporter${n}@example.test`, "--tier", "free");
    if (r.code !== 0) throw new Error(`user add: ${r.stderr}`);
  }
  await appliance.start();
}, 60_000);
afterAll(async () => {
  await appliance?.stop();
  ns?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Three reporters' severity-5 reports of `ip`, through the CLI's CSV import: the address becomes CRITICAL. */
function reportCritical(ip: string): void {
  const file = join(dir, `reports-${ip}.csv`);
  const at = new Date(Date.now() - 60_000).toISOString().slice(0, 19) + "Z";
  writeFileSync(file, `IP,Categories,ReportDate,Comment\n${ip},22,${at},sshd\n`);
  for (const n of [1, 2, 3]) {
    const r = appliance.cli("import", "reports", file, "--reporter", `reporter${n}@example.test`, "--severity", "5");
    if (r.code !== 0) throw new Error(`import reports: ${r.stderr}`);
  }
}

/** Lists `lines` under a feed of severity 5 through the CLI: one listing makes an address HIGH. */
function feed(name: string, lines: string[]): void {
  const file = join(dir, `${name}.txt`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  const r = appliance.cli("import", "blocklist", file, "--source", name, "--category", "HACKING", "--severity", "5");
  if (r.code !== 0) throw new Error(`import ${name}: ${r.stderr}`);
}

describe.skipIf(!ready)("Debian's crowdsec-firewall-bouncer against the appliance, in a network namespace", () => {
  for (const mode of ["nftables", "ipset"] as const) {
    test(`${mode} mode: HIGH dropped, a new CRITICAL dropped within seconds, allowlisted released, a listed /24 dropped whole, across a restart`, async () => {
      const added = appliance.cli("bouncer", "add", `fw-${mode}`, "--mode", mode);
      expect(added.code).toBe(0);
      const key = /api_key: (\S+)/.exec(added.stdout)![1];
      const bouncer = await BouncerInNamespace.start(ns!, mode, key);
      try {
        // Each mode has addresses of its own: the appliance (and its allowlist) is shared by the two tests.
        const high = mode === "nftables" ? "203.0.113.10" : "203.0.113.11";
        await bouncer.until(`${high} (HIGH) dropped after the first pull`, () => bouncer.drops(high));
        expect(bouncer.drops("192.0.2.200")).toBe(false);
        for (const last of [0, 1, 77, 128, 255]) expect(bouncer.drops(`198.51.100.${last}`)).toBe(true);

        // A new CRITICAL address: three reporters' reports; the CLI's commit reaches the server within 2 s, the
        // next pull the kernel.
        const critical = `192.0.2.${mode === "nftables" ? 41 : 42}`;
        reportCritical(critical);
        await bouncer.until(`${critical} (CRITICAL) dropped`, () => bouncer.drops(critical));

        // Allowlisted: released.
        expect(appliance.cli("allow", "add", `${high}/32`).code).toBe(0);
        await bouncer.until(`${high} released once allowlisted`, () => !bouncer.drops(high));

        // The appliance restarts; the bouncer keeps pulling and enforcing what comes after.
        await appliance.stop();
        await appliance.start();
        const after = `192.0.2.${mode === "nftables" ? 51 : 52}`;
        reportCritical(after);
        await bouncer.until(`${after} dropped after the appliance restarted`, () => bouncer.drops(after), 20_000);
        expect(bouncer.exited).toBe(false);
        expect(bouncer.drops(critical)).toBe(true);
      } finally {
        await bouncer.stop();
      }
    }, 120_000);
  }
});
