// Debian's crowdsec-firewall-bouncer for real, in a network namespace a test creates (issue 14): the appliance
// runs inside the same namespace (so the bouncer reaches it on that namespace's loopback, and nothing touches the
// host's rules), driven from the test through its data directory with the CLI. The kernel is asked what the
// bouncer enforces (`nft get element`, `ipset test`), not the set's text. Every process is stopped by its pid.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { NetworkNamespace } from "./netns";

export const BOUNCER_BINARY = "/usr/bin/crowdsec-firewall-bouncer";
const MAIN = join(import.meta.dir, "../../src/main.ts");
export const APPLIANCE_PORT = 18080;

export function bouncerInstalled(): boolean {
  return existsSync(BOUNCER_BINARY);
}

/** The appliance (`abuse-intel serve`) inside the namespace, on its loopback. */
export class ApplianceInNamespace {
  private proc: Subprocess | null = null;
  constructor(
    readonly ns: NetworkNamespace,
    readonly dataDir: string,
  ) {}

  /** The CLI on the same data directory, from the host (the database is a file both see). */
  cli(...args: string[]): { code: number | null; stdout: string; stderr: string } {
    const r = spawnSync(process.execPath, [MAIN, ...args, "--data-dir", this.dataDir], { encoding: "utf8", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  /** Starts it and waits until /readyz answers 200 (benchmarks with a million addresses give it longer). */
  async start(readyWithinMs = 60_000): Promise<void> {
    this.proc = Bun.spawn(this.ns.command(process.execPath, [MAIN, "serve", "--host", "127.0.0.1", "--port", String(APPLIANCE_PORT), "--data-dir", this.dataDir]), {
      stdout: "ignore",
      stderr: "ignore",
      env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" },
    });
    const deadline = Date.now() + readyWithinMs;
    while (Date.now() < deadline) {
      const r = this.ns.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", `http://127.0.0.1:${APPLIANCE_PORT}/readyz`]);
      if (r.stdout === "200") return;
      await Bun.sleep(100);
    }
    throw new Error(`the appliance in the namespace did not become ready within ${readyWithinMs / 1000} s`);
  }

  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    if (this.proc === null) return;
    this.proc.kill(signal);
    await Promise.race([this.proc.exited, Bun.sleep(5000)]);
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
    this.proc = null;
  }
}

/** A bouncer in the namespace, with a configuration of its own in a temporary directory. */
export class BouncerInNamespace {
  private constructor(
    readonly ns: NetworkNamespace,
    readonly mode: "nftables" | "ipset",
    readonly dir: string,
    private readonly proc: Subprocess,
  ) {}

  static async start(ns: NetworkNamespace, mode: "nftables" | "ipset", apiKey: string): Promise<BouncerInNamespace> {
    const dir = mkdtempSync(join(tmpdir(), `abuse-intel-bouncer-${mode}-`));
    if (mode === "ipset") {
      // ipset mode fills sets it does not create (README, "Using CrowdSec firewall bouncers").
      for (const args of [
        ["create", "crowdsec-blacklists", "hash:net", "timeout", "0", "maxelem", "200000"],
        ["create", "crowdsec6-blacklists", "hash:net", "timeout", "0", "family", "inet6", "maxelem", "200000"],
      ]) {
        const r = ns.run("ipset", ["-exist", ...args]);
        if (r.status !== 0) throw new Error(`ipset ${args.join(" ")}: ${r.stderr}`);
      }
    }
    const config = [
      `mode: ${mode}`,
      `pid_dir: ${dir}/`,
      "update_frequency: 1s",
      "daemonize: false",
      "log_mode: file",
      `log_dir: ${dir}/`,
      "log_level: info",
      `api_url: http://127.0.0.1:${APPLIANCE_PORT}/`,
      `api_key: ${apiKey}`,
      "insecure_skip_verify: false",
      "disable_ipv6: false",
      "deny_action: DROP",
      "deny_log: false",
      "supported_decisions_types:",
      "  - ban",
      "blacklists_ipv4: crowdsec-blacklists",
      "blacklists_ipv6: crowdsec6-blacklists",
      "ipset_type: nethash",
      "iptables_chains:",
      "  - INPUT",
      "nftables:",
      "  ipv4:",
      "    enabled: true",
      "    set-only: false",
      "    table: crowdsec",
      "    chain: crowdsec-chain",
      "  ipv6:",
      "    enabled: true",
      "    set-only: false",
      "    table: crowdsec6",
      "    chain: crowdsec6-chain",
      "prometheus:",
      "  enabled: false",
      "  listen_addr: 127.0.0.1",
      "  listen_port: 60601",
      "",
    ].join("\n");
    writeFileSync(join(dir, "bouncer.yaml"), config);
    const proc = Bun.spawn(ns.command(BOUNCER_BINARY, ["-c", join(dir, "bouncer.yaml")]), { stdout: "ignore", stderr: "ignore" });
    return new BouncerInNamespace(ns, mode, dir, proc);
  }

  /** Whether the kernel drops `ip` by this bouncer's set: `nft get element` or `ipset test`. */
  drops(ip: string): boolean {
    if (this.mode === "nftables") return this.ns.run("nft", ["get", "element", "ip", "crowdsec", "crowdsec-blacklists", `{ ${ip} }`]).status === 0;
    return this.ns.run("ipset", ["test", "crowdsec-blacklists", ip]).status === 0;
  }

  /** Waits until `check` holds, for at most `timeoutMs`; throws with the bouncer's log otherwise. */
  async until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (check()) return;
      await Bun.sleep(200);
    }
    throw new Error(`${what}: not so within ${timeoutMs} ms. The bouncer's log:\n${this.log()}`);
  }

  log(): string {
    const path = join(this.dir, "crowdsec-firewall-bouncer.log");
    return existsSync(path) ? readFileSync(path, "utf8").slice(-3000) : "(no log)";
  }

  get exited(): boolean {
    return this.proc.exitCode !== null;
  }

  async stop(): Promise<void> {
    this.proc.kill("SIGTERM");
    await Promise.race([this.proc.exited, Bun.sleep(5000)]);
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}
