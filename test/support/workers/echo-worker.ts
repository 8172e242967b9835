// A worker for the tests of ordered-worker.ts: says "ready", answers each request with itself doubled, and throws
// (an uncaught error: the worker fails) on "crash". "close" makes it leave.

export {};
declare const self: Worker;

self.onmessage = (event: MessageEvent<number | "crash" | "close">) => {
  if (event.data === "close") process.exit(0);
  if (event.data === "crash") throw new Error("asked to crash");
  self.postMessage(event.data * 2);
};
self.postMessage("ready");
