// The worker thread the server's `snapshot` job writes its file on (write-snapshot.ts), with SQLite connections
// of its own, so no piece of an export (the copy, the index and its blobs, SQLite's index builds, the hash, the
// fsync) holds the server's event loop. It says "ready" once loaded, then answers one export request.

import { createPrivateKey } from "node:crypto";
import { AppError } from "../../domain/errors";
import type { ExportReply, ExportRequest } from "./export-in-worker";
import { writeSnapshotFile } from "./write-snapshot";
import { yieldCpuToServers } from "../background-priority";

declare const self: Worker;

// The thread competes with the event loop when they share a core (a CPU-bound 4-16 s at 1 M addresses).
yieldCpuToServers();

self.onmessage = async (event: MessageEvent<ExportRequest | "close">) => {
  // Leaving by itself spares the server the wait of terminate().
  if (event.data === "close") process.exit(0);
  const { signKeyDer, ...input } = event.data;
  let reply: ExportReply;
  try {
    const signKey = signKeyDer === null ? null : createPrivateKey({ key: Buffer.from(signKeyDer), format: "der", type: "pkcs8" });
    reply = { kind: "done", result: await writeSnapshotFile({ ...input, signKey }) };
  } catch (error) {
    reply = { kind: "error", code: error instanceof AppError ? error.errorCode : null, message: String((error as Error)?.message ?? error) };
  }
  self.postMessage(reply);
};
self.postMessage("ready");
