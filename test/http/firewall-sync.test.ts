// `abuse-intel firewall sync` (contract 19) against the appliance, both inside a network namespace this test
// creates (never the host's ruleset), in nft and ipset modes. The kernel is asked (`nft get element`, `ipset
// test`) for listed addresses, addresses inside listed networks and IPv6 ones; an allowlisted address leaves; a
// new CRITICAL one arrives; the sets stay whole while the appliance is down and after a bad key; SIGTERM ends
// the loop leaving them in place; a decoy table and set are never touched; bad arguments exit 2 touching nothing.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApplianceInNamespace } from "../support/crowdsec-bouncer";
import { APPLIANCE_URL, kernelHolds, SyncLoop, syncOnce, until } from "../support/firewall-sync";
import { NetworkNamespace, toolRunsIn } from "../support/netns";

const ns = NetworkNamespace.create("fwsync");
const ready =
  toolRunsIn(ns, "nft", ["list", "tables"], "the firewall sync test") &&
  toolRunsIn(ns, "ipset", ["list", "-n"], "the firewall sync test") &&
  toolRunsIn(ns, "curl", ["--version"], "the firewall sync test");

let dir: string;
let appliance: ApplianceInNamespace;
let key: string;
beforeAll(async () => {
  if (!ready || ns === null) return;
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-fwsync-test-"));
  appliance = new ApplianceInNamespace(ns, join(dir, "data"));
  feed("high", ["203.0.113.10", "203.0.113.11", "203.0.113.12", "203.0.113.13", "198.51.100.0/24", "2001:db8:1::5", "2001:db8:2::/48"]);
  for (const n of [1, 2, 3]) must(appliance.cli("user", "add", "--email", `reporter${n}@example.test`, "--tier", "free"), "user add");
  must(appliance.cli("user", "add", "--email", "firewall@example.test", "--tier", "free"), "user add");
  key = must(appliance.cli("key", "create", "--email", "firewall@example.test", "--name", "firewall"), "key create").stdout.trim();
  // A decoy of someone else's: a table with a set and a chain, and an ipset set, that the sync must never touch.
  for (const cmd of [
    "add table inet decoy",
    "add set inet decoy blocklist { type ipv4_addr; flags interval; }",
    "add element inet decoy blocklist { 10.9.9.9, 203.0.113.10 }",
    "add chain inet decoy input { type filter hook input priority 10; }",
    "add rule inet decoy input ip saddr @blocklist counter drop",
  ]) {
    const r = ns.run("nft", cmd.split(" "));
    if (r.status !== 0) throw new Error(`nft ${cmd}: ${r.stderr}`);
  }
  must2(ns.run("ipset", ["create", "decoy", "hash:ip"]), "ipset create decoy");
  must2(ns.run("ipset", ["add", "decoy", "10.9.9.9"]), "ipset add decoy");
  await appliance.start();
}, 90_000);
afterAll(async () => {
  await appliance?.stop();
  ns?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function must(r: { code: number | null; stdout: string; stderr: string }, what: string) {
  if (r.code !== 0) throw new Error(`${what}: ${r.stderr}`);
  return r;
}
function must2(r: { status: number | null; stderr: string }, what: string) {
  if (r.status !== 0) throw new Error(`${what}: ${r.stderr}`);
}

/** Lists `lines` under a feed of severity 5 through the CLI: one listing makes an address HIGH. */
function feed(name: string, lines: string[]): void {
  const file = join(dir, `${name}.txt`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  must(appliance.cli("import", "blocklist", file, "--source", name, "--category", "HACKING", "--severity", "5"), `import ${name}`);
}

/** Three reporters' severity-5 reports of `ip`, through the CLI's CSV import: the address becomes CRITICAL. */
function reportCritical(ip: string): void {
  const file = join(dir, `reports-${ip}.csv`);
  const at = new Date(Date.now() - 60_000).toISOString().slice(0, 19) + "Z";
  writeFileSync(file, `IP,Categories,ReportDate,Comment\n${ip},22,${at},sshd\n`);
  for (const n of [1, 2, 3]) must(appliance.cli("import", "reports", file, "--reporter", `reporter${n}@example.test`, "--severity", "5"), "import reports");
}

const decoyState = () => `${ns!.run("nft", ["list", "table", "inet", "decoy"]).stdout}\n${ns!.run("ipset", ["list", "decoy"]).stdout.replace(/References: \d+\n/, "")}`;

describe.skipIf(!ready)("firewall sync against the appliance, in a network namespace", () => {
  for (const mode of ["nft", "ipset"] as const) {
    test(`${mode}: listed, networks and IPv6 in the kernel; allowlisted leaves; CRITICAL arrives; intact while the appliance is down and after a bad key; SIGTERM`, async () => {
      const target = mode === "nft" ? ({ kind: "nft", table: "fw", set: "blocklist" } as const) : ({ kind: "ipset", set: "blocklist" } as const);
      const targetArgs = mode === "nft" ? ["--nft", "fw/blocklist"] : ["--ipset", "blocklist"];
      const holds = (ip: string) => kernelHolds(ns!, target, ip);
      const decoyBefore = decoyState();
      const loop = new SyncLoop(ns!, ["--url", APPLIANCE_URL, "--key", key, ...targetArgs, "--risk-level", "HIGH", "--every", "1s", "--timeout", "20s"]);
      const context = () => `The sync's output:\n${loop.output().slice(-3000)}`;
      try {
        // Each mode has addresses of its own: the appliance (and its allowlist) is shared by the two tests.
        const [high, other] = mode === "nft" ? ["203.0.113.10", "203.0.113.12"] : ["203.0.113.11", "203.0.113.13"];
        await until(`${high} in the kernel's set after the first sync`, () => holds(high), context, 60_000);
        for (const ip of [other, "198.51.100.0", "198.51.100.77", "198.51.100.255", "2001:db8:1::5", "2001:db8:2::", "2001:db8:2:ffff::1"]) expect(holds(ip)).toBe(true);
        for (const ip of ["192.0.2.200", "198.51.101.0", "2001:db8:1::6", "2001:db8:3::1"]) expect(holds(ip)).toBe(false);
        await until("the first sync's line", () => loop.syncLines().length > 0, context);
        expect(loop.syncLines()[0]).toMatch(/^firewall sync: .*: 7 entries, .* in \d+\.\d+ s \(the pull \d+\.\d+ s, the appliance's answer began after \d+\.\d+ s\)$/);

        const critical = `192.0.2.${mode === "nft" ? 41 : 42}`;
        reportCritical(critical);
        await until(`${critical} (CRITICAL) in the set`, () => holds(critical), context);
        await until("the sync that added it logged", () => loop.output().includes("8 entries, added 1, removed 0"), context);
        // nft applies a small change as a difference; ipset always fills a staging set and swaps it in.
        expect(loop.output()).toContain(`8 entries, added 1, removed 0, ${mode === "nft" ? "the difference applied" : "the whole sets replaced"}`);

        expect(appliance.cli("allow", "add", `${high}/32`).code).toBe(0);
        await until(`${high} gone from the set once allowlisted`, () => !holds(high), context);
        expect(holds(other)).toBe(true);

        // The appliance down: pulls fail, each in one line, and the sets stay as they were.
        await appliance.stop("SIGKILL");
        const before = loop.syncLines().length;
        await until("two failed syncs logged", () => loop.syncLines().slice(before).filter((l) => l.includes("failed, the sets are left as they were")).length >= 2, context);
        for (const ip of [other, critical, "198.51.100.77", "2001:db8:2::1"]) expect(holds(ip)).toBe(true);
        expect(loop.exitCode).toBeNull();
        await appliance.start();

        // A wrong key: one sync, exit 1, the sets untouched.
        const bad = await syncOnce(ns!, ["--url", APPLIANCE_URL, ...targetArgs, "--once"], { ABUSE_INTEL_SYNC_KEY: "aik_not_a_key" });
        expect(bad.code).toBe(1);
        expect(bad.stderr).toContain("401");
        for (const ip of [other, critical, "198.51.100.77", "2001:db8:2::1"]) expect(holds(ip)).toBe(true);

        // --once with the right key (from the environment) prints its one line and exits 0.
        const once = await syncOnce(ns!, ["--url", APPLIANCE_URL, ...targetArgs, "--risk-level", "HIGH", "--once"], { ABUSE_INTEL_SYNC_KEY: key });
        expect(once.code).toBe(0);
        expect(once.stdout).toMatch(/^firewall sync: .*: 7 entries, .* in \d+\.\d+ s \(the pull \d+\.\d+ s, the appliance's answer began after \d+\.\d+ s\)\n$/);

        // SIGTERM ends the loop; the sets stay in place.
        expect(await loop.signal("SIGTERM")).toBe(0);
        for (const ip of [other, critical, "198.51.100.77", "2001:db8:2::1"]) expect(holds(ip)).toBe(true);
        expect(decoyState()).toBe(decoyBefore);
        if (mode === "ipset") expect(ns!.run("ipset", ["list", "-n"]).stdout.split("\n").filter(Boolean).sort()).toEqual(["blocklist", "blocklist6", "decoy"]);
      } finally {
        await loop.stop();
      }
    }, 180_000);
  }

  test("bad arguments exit 2 naming the option, before anything is fetched or touched", async () => {
    const tablesBefore = ns!.run("nft", ["list", "tables"]).stdout;
    const setsBefore = ns!.run("ipset", ["list", "-n"]).stdout;
    const cases: [string[], string][] = [
      [["--key", key, "--nft", "new/blocklist", "--once"], "--url"],
      [["--url", APPLIANCE_URL, "--nft", "new/blocklist", "--once"], "--key"],
      [["--url", "ftp://127.0.0.1", "--key", key, "--nft", "new/blocklist", "--once"], "--url"],
      [["--url", APPLIANCE_URL, "--key", key, "--nft", "new", "--once"], "--nft"],
      [["--url", APPLIANCE_URL, "--key", key, "--nft", "new/b;flush ruleset", "--once"], "--nft"],
      [["--url", APPLIANCE_URL, "--key", key, "--ipset", "a-name-much-longer-than-ipset-takes", "--once"], "--ipset"],
      [["--url", APPLIANCE_URL, "--key", key, "--nft", "new/blocklist", "--ipset", "newset", "--once"], "--nft"],
      [["--url", APPLIANCE_URL, "--key", key, "--nft", "new/blocklist", "--risk-level", "EXTREME", "--once"], "--risk-level"],
      [["--url", APPLIANCE_URL, "--key", key, "--nft", "new/blocklist", "--category", "NOT_A_CATEGORY", "--once"], "--category"],
      [["--url", APPLIANCE_URL, "--key", key, "--ipset", "newset", "--every", "0s"], "--every"],
      [["--url", APPLIANCE_URL, "--key", key, "--ipset", "newset", "--timeout", "soon", "--once"], "--timeout"],
      [["--url", APPLIANCE_URL, "--key", key, "--ipset", "newset", "--once", "--every", "60s"], "--every"],
      [["--url", APPLIANCE_URL, "--key", key, "--ipset", "newset", "--once", "--frobnicate"], "--frobnicate"],
    ];
    for (const [args, option] of cases) {
      const r = await syncOnce(ns!, args, { ABUSE_INTEL_SYNC_KEY: "" });
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain(option);
    }
    expect(ns!.run("nft", ["list", "tables"]).stdout).toBe(tablesBefore);
    expect(ns!.run("ipset", ["list", "-n"]).stdout).toBe(setsBefore);
  }, 120_000);
});

describe.skipIf(!ready)("firewall sync against an appliance that answers badly, in the network namespace", () => {
  const PORT = 18081;
  let server: ReturnType<typeof Bun.spawn> | null = null;
  beforeAll(async () => {
    server = Bun.spawn(ns!.command(process.execPath, [join(import.meta.dir, "../support/broken-appliance.ts"), String(PORT)]), { stdout: "pipe", stderr: "ignore" });
    const reader = (server.stdout as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    if (!new TextDecoder().decode(first.value).includes("listening")) throw new Error("the broken appliance did not start");
  }, 30_000);
  afterAll(async () => {
    server?.kill("SIGKILL");
    await server?.exited;
  });

  for (const mode of ["nft", "ipset"] as const) {
    test(`${mode}: a cut body, a dropped connection, an HTML page, a 502, a pull past --timeout each exit 1 and leave the sets whole`, async () => {
      const targetArgs = mode === "nft" ? ["--nft", "broken/blocklist"] : ["--ipset", "broken"];
      const target = mode === "nft" ? ({ kind: "nft", table: "broken", set: "blocklist" } as const) : ({ kind: "ipset", set: "broken" } as const);
      const listed = ["10.0.0.0", "10.0.78.254", "192.0.2.1", "198.51.100.0", "198.51.100.200", "203.0.113.9", "2001:db8::1", "2001:db8:1::77"];
      const args = (path: string) => ["--url", `http://127.0.0.1:${PORT}/${path}`, "--key", "any", ...targetArgs, "--once", "--timeout", "3s"];
      const whole = await syncOnce(ns!, args("whole"));
      expect(whole).toMatchObject({ code: 0, stderr: "" });
      expect(whole.stdout).toContain("20005 entries");
      for (const ip of listed) expect(kernelHolds(ns!, target, ip)).toBe(true);
      const reasons: Record<string, RegExp> = {
        cut: /cut short/,
        reset: /failed/,
        html: /not an? (nft|ipset) blocklist/,
        error: /answered 502/,
        stall: /took longer than --timeout \(3 s\)/,
      };
      for (const [path, reason] of Object.entries(reasons)) {
        const r = await syncOnce(ns!, args(path));
        expect({ path, code: r.code }).toEqual({ path, code: 1 });
        expect(r.stderr).toMatch(reason);
        expect(r.stderr).toContain("failed, the sets are left as they were");
        // (`nft get element` reads the whole set back: a few addresses each time, all of them at the end.)
        for (const ip of ["192.0.2.1", "2001:db8:1::77"]) expect({ path, ip, held: kernelHolds(ns!, target, ip) }).toEqual({ path, ip, held: true });
      }
      for (const ip of listed) expect(kernelHolds(ns!, target, ip)).toBe(true);
      if (mode === "ipset") expect(ns!.run("ipset", ["list", "-n"]).stdout).not.toContain(".next");
    }, 120_000);
  }
});
