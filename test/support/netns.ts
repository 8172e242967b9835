// A network namespace of a test's own, so firewall tools (nft, ipset, the CrowdSec bouncer) load their rules there and
// never touch the host's. Creating one needs root and iproute2; where that is impossible the tests that need it skip,
// unless ABUSE_INTEL_FIREWALL_TESTS=required (set by .ci/run, which installs the tools), where they fail instead.

import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";

export const FIREWALL_TESTS_REQUIRED = process.env.ABUSE_INTEL_FIREWALL_TESTS === "required";

export class NetworkNamespace {
  private constructor(readonly name: string) {}

  /** A fresh namespace with its loopback up, or null where this machine cannot make one. The test destroys it. */
  static create(purpose: string): NetworkNamespace | null {
    const name = `ai-${purpose}-${process.pid}-${Math.floor(Math.random() * 1e6)}`;
    const added = spawnSync("ip", ["netns", "add", name], { encoding: "utf8" });
    if (added.error || added.status !== 0) return null;
    const ns = new NetworkNamespace(name);
    ns.run("ip", ["link", "set", "lo", "up"]);
    return ns;
  }

  /** Runs a command inside the namespace and waits for it. */
  run(command: string, args: string[], input?: string): SpawnSyncReturns<string> {
    return spawnSync("ip", ["netns", "exec", this.name, command, ...args], { encoding: "utf8", input });
  }

  /** The argument list that starts a long-running process inside the namespace (for Bun.spawn). */
  command(command: string, args: string[]): string[] {
    return ["ip", "netns", "exec", this.name, command, ...args];
  }

  /** Adds `cidr` (e.g. `203.0.113.7/32`) to the namespace's loopback, so a client there can send from it. */
  addLoopbackAddress(cidr: string): void {
    const r = this.run("ip", ["addr", "add", cidr, "dev", "lo"]);
    if (r.status !== 0) throw new Error(`ip addr add ${cidr}: ${r.stderr}`);
  }

  /**
   * Points the resolver of every process started in the namespace at `nameserver` (port 53): `ip netns exec`
   * mounts /etc/netns/NAME/resolv.conf over /etc/resolv.conf. destroy() removes the file.
   */
  useNameserver(nameserver: string): void {
    mkdirSync(`/etc/netns/${this.name}`, { recursive: true });
    writeFileSync(`/etc/netns/${this.name}/resolv.conf`, `nameserver ${nameserver}\noptions attempts:1 timeout:5\n`);
  }

  destroy(): void {
    spawnSync("ip", ["netns", "delete", this.name]);
    rmSync(`/etc/netns/${this.name}`, { recursive: true, force: true });
  }
}

/** Whether `command args` runs inside the namespace; warns (or throws where the tools are required) when not. */
export function toolRunsIn(ns: NetworkNamespace | null, command: string, args: string[], why: string): boolean {
  const r = ns?.run(command, args);
  const ok = r !== undefined && !r.error && r.status === 0;
  if (!ok) {
    const reason = ns === null ? "no network namespace (needs root and iproute2)" : `${command} did not run: ${r?.error?.message ?? r?.stderr}`;
    if (FIREWALL_TESTS_REQUIRED) throw new Error(`${why}: ${reason}, and ABUSE_INTEL_FIREWALL_TESTS=required`);
    console.warn(`${why} skipped: ${reason}`);
  }
  return ok;
}
