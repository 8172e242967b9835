// The worker thread a large import parses its file on (row-batch.ts), while the importing thread writes the rows
// of the pieces before. It says "ready" once loaded, then answers each piece in order.

import { AppError } from "../../domain/errors";
import { PieceParser, rowBatchBuffers } from "./row-batch";
import type { ParseRequest, ParseReply } from "./piece-parsers";

declare const self: Worker;

let parser: PieceParser | null = null;

self.onmessage = (event: MessageEvent<ParseRequest | "close">) => {
  // Leaving by itself spares the importing thread the wait of terminate().
  if (event.data === "close") process.exit(0);
  const request = event.data;
  if (request.kind === "start") {
    parser = new PieceParser(request.options);
    return;
  }
  let reply: ParseReply;
  try {
    const batch = parser!.push(request.text, request.final);
    self.postMessage({ kind: "rows", batch } satisfies ParseReply, { transfer: rowBatchBuffers(batch) });
    return;
  } catch (error) {
    reply = error instanceof AppError ? { kind: "error", code: error.errorCode, message: error.message } : { kind: "error", code: null, message: String((error as Error)?.message ?? error) };
  }
  self.postMessage(reply);
};
self.postMessage("ready");
