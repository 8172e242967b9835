// A primary whose answers to GET /v1/snapshots/latest each test scripts (a snapshot, an older one, garbage, a body
// that stalls or drips, one damaged on the way), on 127.0.0.1, and the signed snapshots it hands out, made by the
// real exporter from a harness.

import { Database } from "bun:sqlite";
import type { Server } from "bun";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportSnapshot } from "../../src/services/snapshots/export";
import { readPrivateKey, signHash, writeKeyPair } from "../../src/services/snapshots/signing";
import { contentHash, META } from "../../src/store/snapshot-format";
import { addUser } from "./accounts";
import { createHarness, type Harness } from "./harness";

/**
 * A temporary directory (named from `prefix`) with the primary's key pair (`primary.key`, `primary.pub`), and the
 * snapshots `make` writes there from a fresh harness (closed after). The caller removes `dir`.
 */
export async function signedSnapshots(prefix: string, make: (h: Harness, dir: string, signKey: string) => Promise<void>): Promise<{ dir: string; keyPrefix: string }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const keyPrefix = join(dir, "primary");
  writeKeyPair(keyPrefix);
  const h = await createHarness();
  try {
    await make(h, dir, `${keyPrefix}.key`);
  } finally {
    await h.close();
  }
  return { dir, keyPrefix };
}

/** Reports `ip` once more on the harness (a new reporter each time) and exports a signed snapshot at its clock's now. */
export async function reportAndExport(h: Harness, ip: string, out: string, signKey: string): Promise<void> {
  const u = await addUser(h, { tier: "enterprise" });
  const res = await h.call("POST", "/v1/ip/report", { headers: u.jwt, json: { ip, category: "ssh", severity: 5 } });
  if (res.status !== 201) throw new Error(`report: ${res.status} ${await res.text()}`);
  await exportSnapshot({ store: h.store, services: h.services, out, signKey, nowMs: h.clock.now() });
}

/**
 * A copy of `file` whose content is changed by `damage` (SQL on the copy), then hashed and signed again with
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

/** The ETag the primary gives a snapshot: its recorded content hash, quoted. */
export function etagOf(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    return `"${(db.query("SELECT value FROM meta WHERE key = ?").get(META.contentSha256) as { value: string }).value}"`;
  } finally {
    db.close();
  }
}

/** The primary's answer to one request, the nth (from 1). */
export type Answer = (request: Request, n: number) => Response | Promise<Response>;

/** Answers like the primary's route: 304 to the ETag, 206 to a Range with a matching If-Range, else 200. */
export function serveFile(file: string): Answer {
  return serveBytes(new Uint8Array(readFileSync(file)), etagOf(file));
}

/** The file with one byte flipped in its middle, under the file's own ETag: a transfer damaged on the way. */
export function flippedInTransit(file: string): Answer {
  const bytes = new Uint8Array(readFileSync(file));
  bytes[bytes.length >> 1] ^= 0xff;
  return serveBytes(bytes, etagOf(file));
}

function serveBytes(bytes: Uint8Array, etag: string): Answer {
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

/** Headers and the first `bytes` of the file, then nothing more, ever (the connection stays open). */
export function stallAfter(file: string, bytes: number): Answer {
  const whole = new Uint8Array(readFileSync(file));
  const etag = etagOf(file);
  return () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(whole.subarray(0, bytes));
        },
      }),
      { headers: { etag, "content-length": String(whole.length) } },
    );
}

/** The file one byte every `everyMs`: a body that never stalls and never ends in time. */
export function dripping(file: string, everyMs: number): Answer {
  const whole = new Uint8Array(readFileSync(file));
  const etag = etagOf(file);
  return () => {
    let at = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          await Bun.sleep(everyMs);
          if (at < whole.length) controller.enqueue(whole.subarray(at, ++at));
          else controller.close();
        },
      }),
      { headers: { etag, "content-length": String(whole.length) } },
    );
  };
}

export interface ScriptedPrimary {
  url: string;
  /** What the next requests get. */
  answer: Answer;
  /** The status of each answer, in order. */
  statuses: number[];
  stop(): void;
}

export function scriptedPrimary(answer: Answer): ScriptedPrimary {
  const state: ScriptedPrimary = { url: "", answer, statuses: [], stop: () => server.stop(true) };
  let requests = 0;
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (request) => {
      const res = await state.answer(request, ++requests);
      state.statuses.push(res.status);
      return res;
    },
  });
  state.url = `http://127.0.0.1:${server.port}`;
  return state;
}
