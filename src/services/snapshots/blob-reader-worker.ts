// The worker thread an edge reads a new snapshot's blobs on (the pre-built index's trees and columns, the range
// tables): SQLite hands over a large blob at 70-100 MB/s here, so at 200,000 addresses each of the two largest held
// the event loop about 250 ms. It says "ready" once loaded, then answers one request with the blobs, sent (not
// copied) to the thread that asked.

import { indexBlobRows, openSnapshotDatabase, rangeTableRows } from "../../store/snapshot-file";
import { yieldCpuToServers } from "../background-priority";
import { RadixTree4 } from "../../index/radix4";
import { RadixTree6 } from "../../index/radix6";
import type { SnapshotBlobs } from "./snapshot-blobs";

declare const self: Worker;

yieldCpuToServers();

/** The blob's own buffer, so it can be sent without taking others' bytes along. */
const owned = (bytes: Uint8Array) => (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice());

self.onmessage = (event: MessageEvent<string | "close">) => {
  if (event.data === "close") process.exit(0);
  let reply: SnapshotBlobs | { error: string };
  try {
    const db = openSnapshotDatabase(event.data);
    try {
      const index = indexBlobRows(db).map((row) => ({ ...row, bytes: owned(row.bytes) }));
      // The trees' links are walked here (a damaged tree throws), and their networks counted, not again on the
      // thread that serves.
      let networkCount = 0;
      for (const row of index) {
        if (row.type === "radix4") RadixTree4.deserialize(row.bytes).walk((_network, prefixLength) => void (prefixLength < 32 && networkCount++));
        if (row.type === "radix6") RadixTree6.deserialize(row.bytes).walk((_network, prefixLength) => void (prefixLength < 128 && networkCount++));
      }
      reply = { index, linksChecked: true, networkCount, ranges: rangeTableRows(db).map((row) => ({ ...row, bytes: owned(row.bytes) })) };
    } finally {
      db.close();
    }
  } catch (error) {
    reply = { error: String((error as Error)?.message ?? error) };
  }
  const transfer = "error" in reply ? [] : [...reply.index, ...reply.ranges].map((row) => row.bytes.buffer as ArrayBuffer);
  self.postMessage(reply, { transfer });
};
self.postMessage("ready");
