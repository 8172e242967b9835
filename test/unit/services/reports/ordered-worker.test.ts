// The import's worker client (ordered-worker.ts) against real worker threads: replies in order, readiness with a
// time limit, and a worker that fails takes its pending requests down with it and takes no more.

import { expect, test } from "bun:test";
import { startOrderedWorker } from "../../../../src/services/reports/ordered-worker";

const worker = (name: string) => new URL(`../../../support/workers/${name}`, import.meta.url).href;

test("answers each request in the order sent, once it said it is ready", async () => {
  const w = startOrderedWorker<number | "crash", number>(worker("echo-worker.ts"), "echo failed");
  expect(w.usable).toBe(false);
  expect(await w.whenReady(10_000)).toBe(true);
  expect(w.usable).toBe(true);
  expect(await Promise.all([1, 2, 3, 4, 5].map((n) => w.request(n)))).toEqual([2, 4, 6, 8, 10]);
  w.close();
});

test("a worker that fails rejects what it had and every later request, and stops being usable", async () => {
  const w = startOrderedWorker<number | "crash", number>(worker("echo-worker.ts"), "echo failed");
  expect(await w.whenReady(10_000)).toBe(true);
  const [crashed, queued] = await Promise.allSettled([w.request("crash"), w.request(7)]);
  expect(crashed).toEqual({ status: "rejected", reason: new Error("echo failed") });
  expect(queued).toEqual({ status: "rejected", reason: new Error("echo failed") });
  expect(w.usable).toBe(false);
  await expect(w.request(1)).rejects.toThrow("echo failed");
  expect(await w.whenReady(10)).toBe(false);
  w.close();
});

test("a worker that never says it is ready is not usable after the wait, and close ends it", async () => {
  const w = startOrderedWorker<number, number>(worker("mute-worker.ts"), "mute failed");
  const started = performance.now();
  expect(await w.whenReady(150)).toBe(false);
  expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  expect(w.usable).toBe(false);
  w.close();
  await expect(w.request(1)).rejects.toThrow("mute failed");
});

test("a script that cannot be loaded is a failed worker, not a thrown error", async () => {
  const w = startOrderedWorker<number, number>(worker("no-such-worker.ts"), "missing failed");
  expect(await w.whenReady(10_000)).toBe(false);
  expect(w.usable).toBe(false);
  w.close();
});
