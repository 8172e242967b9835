// A primary and an edge that forwards reports to it (contract 18), as two executables on 127.0.0.1 with fixed
// ports, so either can be stopped (SIGTERM or SIGKILL) and started again on the same data directory and port while
// the other keeps going. Counts are read from the primary's database file, never from logs.

import { Database } from "bun:sqlite";
import { join } from "node:path";
import { createSandbox, parseFirstStartCredentials, runCli, type Sandbox } from "./binary";
import { bodyOf, type RunningServer, startServer } from "./server";

export const EDGE_KEY = "edge-client-key-0123456789abcdef";
export const OTHER_EDGE_KEY = "edge-client-key-fedcba9876543210";

/** A port nobody listens on now. */
export function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port as number;
  probe.stop(true);
  return port;
}

export class ForwardingPair {
  primary: RunningServer | null = null;
  edge: RunningServer | null = null;
  adminKey = "";
  readonly primaryPort = freePort();
  readonly edgePort = freePort();

  private constructor(
    readonly primarySandbox: Sandbox,
    readonly edgeSandbox: Sandbox,
    private readonly edgeArgs: string[],
  ) {}

  /** Makes the key pair, starts the primary (first start) and takes its admin's API key; the edge is not started. */
  static async create(edgeArgs: string[] = []): Promise<ForwardingPair> {
    const pair = new ForwardingPair(createSandbox(), createSandbox(), edgeArgs);
    const keygen = await runCli(pair.primarySandbox, ["snapshot", "keygen", "--out", join(pair.primarySandbox.dir, "primary")]);
    if (keygen.code !== 0) throw new Error(`snapshot keygen failed: ${keygen.stderr}`);
    await pair.startPrimary();
    pair.adminKey = parseFirstStartCredentials(pair.primary!.output())!.apiKey as string;
    return pair;
  }

  get primaryUrl(): string {
    return `http://127.0.0.1:${this.primaryPort}`;
  }

  get edgeUrl(): string {
    return `http://127.0.0.1:${this.edgePort}`;
  }

  async startPrimary(): Promise<void> {
    this.primary = await startServer(this.primarySandbox, { args: ["--port", String(this.primaryPort), "--sign-key", join(this.primarySandbox.dir, "primary.key")], readyTimeoutMs: 60_000 });
  }

  /** Runs the snapshot job on the primary's data directory (signed, so the edge serves it). */
  async snapshotOnPrimary(): Promise<void> {
    // A snapshot runs at a low CPU priority: beside CPU-bound work it takes far longer than on a quiet machine.
    const run = await runCli(this.primarySandbox, ["jobs", "run", "snapshot", "--sign-key", join(this.primarySandbox.dir, "primary.key")], { timeoutMs: 240_000 });
    if (run.code !== 0) throw new Error(`jobs run snapshot failed: ${run.stderr}`);
  }

  async stopPrimary(signal: NodeJS.Signals): Promise<void> {
    await this.primary?.stop(signal);
    this.primary = null;
  }

  /** Starts the edge (not waiting for a snapshot: it takes reports before its first one). */
  async startEdge(): Promise<void> {
    this.edge = await startServer(this.edgeSandbox, {
      args: [
        "--port", String(this.edgePort),
        "--follow", this.primaryUrl, "--follow-key", this.adminKey, "--forward-key", this.adminKey,
        "--pubkey", join(this.primarySandbox.dir, "primary.pub"), "--every", "1",
        "--api-key", EDGE_KEY, "--api-key", OTHER_EDGE_KEY,
        ...this.edgeArgs,
      ],
      waitReady: false,
      readyTimeoutMs: 60_000,
    });
  }

  async stopEdge(signal: NodeJS.Signals): Promise<void> {
    await this.edge?.stop(signal);
    this.edge = null;
  }

  /** POST /v1/ip/report to the edge: the status (0 when it could not be reached). */
  async report(ip: string, key = EDGE_KEY): Promise<number> {
    try {
      const res = await fetch(`${this.edgeUrl}/v1/ip/report`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ ip, category: "ssh", severity: 4, description: "seen at the edge" }),
        signal: AbortSignal.timeout(30_000),
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  }

  async edgeReadiness(): Promise<{ forwardQueue: number; lastForwardError: string | null; forwardRefused: { id: string; ip: string; code: string }[] }> {
    return bodyOf(await fetch(`${this.edgeUrl}/readyz`));
  }

  /** How many reports the primary's database holds of each address (read from the file, with its own connection). */
  storedCounts(): Map<string, number> {
    const db = new Database(join(this.primarySandbox.dataDir, "abuse-intel.db"), { readonly: true });
    try {
      const rows = db.query<{ ip: string; n: number }, []>("SELECT ip, count(*) AS n FROM reports GROUP BY ip").all();
      return new Map(rows.map((r) => [r.ip, r.n]));
    } finally {
      db.close();
    }
  }

  async close(): Promise<void> {
    await this.stopEdge("SIGKILL");
    await this.stopPrimary("SIGKILL");
    this.primarySandbox.cleanup();
    this.edgeSandbox.cleanup();
  }
}

/** Polls `probe` until it gives a value other than null; throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => T | null | Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await probe();
      if (value !== null) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ""}`);
    await Bun.sleep(200);
  }
}

/** Every acknowledged address stored exactly once, and nothing stored twice: null while some are still missing. */
export function exactlyOnce(stored: Map<string, number>, acknowledged: Iterable<string>): true | null {
  for (const [ip, n] of stored) if (n > 1) throw new Error(`${ip} is stored ${n} times`);
  for (const ip of acknowledged) if (!stored.has(ip)) return null;
  return true;
}
