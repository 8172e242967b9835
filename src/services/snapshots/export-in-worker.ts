// A snapshot written on a worker thread (export-worker.ts) while the server's event loop goes on answering: the
// server's `snapshot` job. The server hands the worker what only it holds (the enrichment's range tables, copied
// a table a turn; the signing key as its PKCS#8 bytes) and waits for the result.

import type { KeyObject } from "node:crypto";
import { AppError, type ErrorCode } from "../../domain/errors";
import { nextTurn } from "../event-loop-turns";
import { withReadyWorker } from "../reports/ordered-worker";
import { workerSpecifier } from "../worker-module";
import type { ExportResult, SnapshotFileInput } from "./write-snapshot";

export type ExportRequest = Omit<SnapshotFileInput, "signKey"> & { signKeyDer: Uint8Array | null };
export type ExportReply = { kind: "done"; result: ExportResult } | { kind: "error"; code: ErrorCode | null; message: string };

/** Bytes copied between two turns of the event loop. */
const COPY_CHUNK_BYTES = 1 << 20;

/** A copy of `bytes` (which nobody changes meanwhile), made a chunk a turn. */
async function copyInTurns(bytes: Uint8Array): Promise<Uint8Array> {
  const copy = new Uint8Array(bytes.length);
  for (let at = 0; at < bytes.length; at += COPY_CHUNK_BYTES) {
    copy.set(bytes.subarray(at, at + COPY_CHUNK_BYTES), at);
    await nextTurn();
  }
  return copy;
}

/** Writes the snapshot of `input` on a worker thread; resolves with what writeSnapshotFile gives. */
export async function writeSnapshotInWorker(input: SnapshotFileInput): Promise<ExportResult> {
  const reply = await withReadyWorker<ExportRequest, ExportReply, ExportReply>(workerSpecifier("snapshots/export-worker.ts"), "the snapshot's export worker", async (worker) => {
    // Copies the worker owns (sent, not cloned), a megabyte a turn: one slice of a whole table held the loop 30 ms.
    const rangeTables: { name: string; bytes: Uint8Array }[] = [];
    for (const table of input.rangeTables) rangeTables.push({ name: table.name, bytes: await copyInTurns(table.bytes) });
    const signKeyDer = input.signKey === null ? null : new Uint8Array(input.signKey.export({ type: "pkcs8", format: "der" }));
    const { signKey: _, ...rest } = input;
    return worker.request({ ...rest, rangeTables, signKeyDer }, rangeTables.map((t) => t.bytes.buffer as ArrayBuffer));
  });
  if (reply.kind === "error") throw reply.code === null ? new Error(reply.message) : new AppError(reply.code, reply.message);
  return reply.result;
}
