// `abuse-intel firewall sync` as a process inside a test's network namespace (beside the appliance, which it
// reaches on that namespace's loopback), with its output collected, and the kernel asked what the sets hold.

import type { Subprocess } from "bun";
import { join } from "node:path";
import { APPLIANCE_PORT } from "./crowdsec-bouncer";
import type { NetworkNamespace } from "./netns";

const MAIN = join(import.meta.dir, "../../src/main.ts");
export const APPLIANCE_URL = `http://127.0.0.1:${APPLIANCE_PORT}`;

/** The sync's argument list as run inside the namespace. */
export function syncCommand(ns: NetworkNamespace, args: string[]): string[] {
  return ns.command(process.execPath, [MAIN, "firewall", "sync", ...args]);
}

/** One `firewall sync` run to its end inside the namespace. */
export async function syncOnce(ns: NetworkNamespace, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(syncCommand(ns, args), { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** A running `firewall sync --every ...` loop. */
export class SyncLoop {
  private out = "";
  private readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  private readonly reading: Promise<void>;

  constructor(ns: NetworkNamespace, args: string[]) {
    this.proc = Bun.spawn(syncCommand(ns, args), { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) this.out += decoder.decode(chunk, { stream: true });
    };
    this.reading = Promise.all([collect(this.proc.stdout), collect(this.proc.stderr)]).then(() => {});
  }

  output(): string {
    return this.out;
  }

  /** Lines that report a sync (success or failure), in order. */
  syncLines(): string[] {
    return this.out.split("\n").filter((l) => l.startsWith("firewall sync: ") && !l.includes("stopped"));
  }

  get pid(): number {
    return this.proc.pid;
  }

  get exitCode(): number | null {
    return this.proc.exitCode;
  }

  /** Sends a signal and waits (at most `ms`) for the exit; the exit code, or null if it did not exit. */
  async signal(signal: NodeJS.Signals, ms = 60_000): Promise<number | null> {
    this.proc.kill(signal);
    await Promise.race([this.proc.exited, Bun.sleep(ms)]);
    await Promise.race([this.reading, Bun.sleep(1000)]);
    return this.proc.exitCode;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    if ((await this.signal("SIGTERM", 30_000)) === null) this.proc.kill("SIGKILL");
  }
}

/** Waits until `check` holds, for at most `timeoutMs`; throws with `context()` otherwise. */
export async function until(what: string, check: () => boolean, context: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return;
    await Bun.sleep(200);
  }
  throw new Error(`${what}: not so within ${timeoutMs} ms.\n${context()}`);
}

/** What the kernel says: whether the sync's sets hold `ip` (an address, or one inside a listed network). */
export function kernelHolds(ns: NetworkNamespace, target: { kind: "nft"; table: string; set: string } | { kind: "ipset"; set: string }, ip: string): boolean {
  const set = ip.includes(":") ? `${target.set}6` : target.set;
  if (target.kind === "nft") return ns.run("nft", ["get", "element", "inet", target.table, set, `{ ${ip} }`]).status === 0;
  return ns.run("ipset", ["test", set, ip]).status === 0;
}
