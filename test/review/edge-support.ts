// Support for the review's edge tests: signed snapshots made by the real exporter from a harness primary, a
// fake primary whose answers to GET /v1/snapshots/latest each test scripts (garbage, stalls, old snapshots),
// and a real `abuse-intel serve --follow` edge process (src/main.ts) on 127.0.0.1.

import { Database } from "bun:sqlite";
import type { Server } from "bun";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { exportSnapshot } from "../../src/services/snapshots/export";
import { readPrivateKey, signHash } from "../../src/services/snapshots/signing";
import { contentHash, META } from "../../src/store/snapshot-format";
import { addUser, type TestUser } from "../support/accounts";
import type { Harness } from "../support/harness";

export const MAIN = join(import.meta.dir, "../../src/main.ts");
export const EDGE_KEY = "edge-client-key-0123456789abcdef";

/** Reports `ip` once more on the harness (a new reporter each time) and exports a signed snapshot at `nowMs`. */
export async function reportAndExport(h: Harness, ip: string, out: string, signKey: string): Promise<void> {
  const u: TestUser = await addUser(h, { tier: "enterprise" });
  const res = await h.call("POST", "/v1/ip/report", { headers: u.jwt, json: { ip, category: "ssh", severity: 5 } });
  if (res.status !== 201) throw new Error(`report: ${res.status} ${await res.text()}`);
  await exportSnapshot({ store: h.store, services: h.services, out, signKey, nowMs: h.clock.now() });
}

/**
 * A copy of `file` whose content is changed by `damage` (SQL on the copy) and then hashed and signed again with
 * `signKey`: what a primary with a bug in its exporter would publish. Its signature is valid.
 */
export function damagedButSigned(file: string, out: string, signKey: string, damage: string): void {
  copyFileSync(file, out);
  const db = new Database(out, { readwrite: true });
  try {
    db.exec(damage);
    const sha = contentHash(db);
    db.query("UPDATE meta SET value = ? WHERE key = ?").run(sha, META.contentSha256);
    db.query("UPDATE meta SET value = ? WHERE key = ?").run(signHash(sha, readPrivateKey(signKey)), META.signature);
  } finally {
    db.close();
  }
}

export const etagOf = (file: string): string => {
  const db = new Database(file, { readonly: true });
  try {
    return `"${(db.query("SELECT value FROM meta WHERE key = ?").get(META.contentSha256) as { value: string }).value}"`;
  } finally {
    db.close();
  }
};

export type Answer = (request: Request, n: number) => Response | Promise<Response>;

/** Answers like the primary's route: 304 to the ETag, 206 to a Range with a matching If-Range, else 200. */
export function serveFile(file: string): Answer {
  const bytes = new Uint8Array(readFileSync(file));
  const etag = etagOf(file);
  return (request) => {
    if (request.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers: { etag } });
    const range = request.headers.get("range");
    if (range !== null && request.headers.get("if-range") === etag) {
      const from = Number(/bytes=(\d+)-/.exec(range)![1]);
      if (from >= bytes.length) return new Response(null, { status: 416 });
      return new Response(bytes.subarray(from), { status: 206, headers: { etag, "content-range": `bytes ${from}-${bytes.length - 1}/${bytes.length}` } });
    }
    return new Response(bytes, { headers: { etag, "content-type": "application/vnd.sqlite3" } });
  };
}

export interface FakePrimary {
  url: string;
  /** What the next requests get. */
  answer: Answer;
  /** Requests seen so far. */
  requests: number;
  /** The status of each answer, in order. */
  statuses: number[];
  stop(): void;
}

export function fakePrimary(answer: Answer): FakePrimary {
  const state: FakePrimary = {
    url: "",
    answer,
    requests: 0,
    statuses: [],
    stop: () => server.stop(true),
  };
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (request) => {
      const res = await state.answer(request, ++state.requests);
      state.statuses.push(res.status);
      return res;
    },
  });
  state.url = `http://127.0.0.1:${server.port}`;
  return state;
}

export interface EdgeProcess {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
  output(): string;
  reputation(ip: string): Promise<{ status: number; totalReports: number | null }>;
  readyz(): Promise<{ status: number; body: { edge?: { lastPullError: string | null; lastPullAt: string | null; snapshotCreatedAt: string | null } } }>;
  stop(): Promise<void>;
}

/** Starts `serve --follow` (the real CLI) and waits for its listening line; null with its output when it exits first. */
export async function startEdge(dataDir: string, primaryUrl: string, pubkey: string, extra: string[] = []): Promise<EdgeProcess> {
  const proc = Bun.spawn(
    [process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir, "--follow", primaryUrl, "--follow-key", "aik_primary-admin-key", "--pubkey", pubkey, "--every", "1", "--api-key", EDGE_KEY, ...extra],
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } },
  );
  let text = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  void pump(proc.stdout as ReadableStream<Uint8Array>);
  void pump(proc.stderr as ReadableStream<Uint8Array>);
  const deadline = Date.now() + 15_000;
  let url = "";
  while (url === "") {
    const m = /listening on (http:\/\/[^\s]+)/.exec(text);
    if (m) url = m[1];
    else if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      await proc.exited;
      throw new Error(`the edge did not start (exit ${proc.exitCode}):\n${text}`);
    } else await Bun.sleep(50);
  }
  return {
    url,
    proc,
    output: () => text,
    async reputation(ip) {
      const res = await fetch(`${url}/v1/ip/${ip}/reputation`, { headers: { "x-api-key": EDGE_KEY } });
      const body = (await res.json()) as { data?: { totalReports: number } };
      return { status: res.status, totalReports: body.data?.totalReports ?? null };
    },
    async readyz() {
      const res = await fetch(`${url}/readyz`);
      return { status: res.status, body: await res.json() };
    },
    async stop() {
      if (proc.exitCode === null) proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/** Polls `probe` until it gives a value other than null, or the deadline passes (then null). */
export async function within<T>(ms: number, probe: () => Promise<T | null>): Promise<T | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => null);
    if (v !== null) return v;
    if (Date.now() > deadline) return null;
    await Bun.sleep(150);
  }
}

/** Headers and the first `bytes` of the file, then nothing more, ever (the connection stays open). */
export function stallAfter(file: string, bytes: number): Answer {
  const head = new Uint8Array(readFileSync(file)).subarray(0, bytes);
  const etag = etagOf(file);
  const length = readFileSync(file).length;
  return () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(head);
        },
      }),
      { headers: { etag, "content-length": String(length) } },
    );
}

/** The file with one byte flipped in its middle, with the file's own ETag: a transfer damaged on the way. */
export function flippedInTransit(file: string): Answer {
  const bytes = new Uint8Array(readFileSync(file));
  bytes[bytes.length >> 1] ^= 0xff;
  const etag = etagOf(file);
  return () => new Response(bytes, { headers: { etag } });
}
