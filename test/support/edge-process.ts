// A real read-only edge, `abuse-intel serve --follow` (src/main.ts in its own process) on 127.0.0.1, pulling every
// second from a primary, with what a test asks of it: a lookup, /readyz, the decisions stream.

import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../src/main.ts");
/** The API key the edge's own clients use. */
export const EDGE_KEY = "edge-client-key-0123456789abcdef";

export interface EdgeReadiness {
  status: number;
  edge: { lastPullError: string | null; lastPullAt: string | null; snapshotCreatedAt: string | null };
}

export interface EdgeProcess {
  url: string;
  dataDir: string;
  proc: ReturnType<typeof Bun.spawn>;
  output(): string;
  reputation(ip: string): Promise<{ status: number; totalReports: number | null }>;
  readyz(): Promise<EdgeReadiness>;
  stop(): Promise<void>;
}

/** Starts the edge and waits for its listening line; throws with its output when it exits first. */
export async function startEdge(dataDir: string, primaryUrl: string, pubkey: string, extraArgs: string[] = []): Promise<EdgeProcess> {
  const proc = Bun.spawn(
    [process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir, "--follow", primaryUrl, "--follow-key", "aik_primary-admin-key", "--pubkey", pubkey, "--every", "1", "--api-key", EDGE_KEY, ...extraArgs],
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } },
  );
  let text = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  void pump(proc.stdout as ReadableStream<Uint8Array>);
  void pump(proc.stderr as ReadableStream<Uint8Array>);
  const deadline = Date.now() + 60_000;
  let url = "";
  while (url === "") {
    const m = /listening on (http:\/\/[^\s]+)/.exec(text);
    if (m) url = m[1];
    else if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      await proc.exited;
      throw new Error(`the edge did not start (exit ${proc.exitCode}):\n${text}`);
    } else await Bun.sleep(20);
  }
  return {
    url,
    dataDir,
    proc,
    output: () => text,
    async reputation(ip) {
      const res = await fetch(`${url}/v1/ip/${ip}/reputation`, { headers: { "x-api-key": EDGE_KEY } });
      const body = (await res.json()) as { data?: { totalReports: number } };
      return { status: res.status, totalReports: body.data?.totalReports ?? null };
    },
    async readyz() {
      const res = await fetch(`${url}/readyz`);
      const body = (await res.json()) as { edge: EdgeReadiness["edge"] };
      return { status: res.status, edge: body.edge };
    },
    async stop() {
      if (proc.exitCode === null) proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/** Polls `probe` until it gives a value other than null, or `ms` pass (then null). */
export async function within<T>(ms: number, probe: () => Promise<T | null>): Promise<T | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => null);
    if (v !== null) return v;
    if (Date.now() > deadline) return null;
    await Bun.sleep(50);
  }
}
