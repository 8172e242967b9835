// A worker for the tests of ordered-worker.ts that never says "ready" (as an executable built without a worker's
// entry point).

export {};
declare const self: Worker;

self.onmessage = () => {};
