// The worker thread a large import scores its addresses on (address-batch-scoring.ts), while the importing thread
// goes on reading the address index and writing rows. It says "ready" once loaded, then answers each batch in order.

import { type AddressBatch, scoreAddressBatch } from "./address-batch-scoring";

declare const self: Worker;

self.onmessage = (event: MessageEvent<AddressBatch | "close">) => {
  // Leaving by itself spares the importing thread the wait of terminate().
  if (event.data === "close") process.exit(0);
  const scored = scoreAddressBatch(event.data);
  self.postMessage(scored, { transfer: [scored.buffer as ArrayBuffer] });
};
self.postMessage("ready");
