// Admin requests that answer when their work is done (a feed refreshed from a slow source here; job runs and feed
// adds take the same path in src/http/server.ts) are not cut off by Bun.serve's idle timeout, which cuts a request
// without a body whose answer has not come (one with a body it leaves, measured on Bun 1.4.5). The listener
// production serves with, on a real port, with its idle timeout shortened to 1 s: Bun's timers tick every 4 s, so
// such a request is cut after 4-8 s (measured: 4.0-5.0 s); the source answers after 9 s, not after the default 10-14.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { listen } from "../../src/http/server";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

const SLOW_SOURCE_MS = 9_000;
let sourceDelayMs = 0;
let sourceList = "203.0.113.0/24\n";

let h: Harness;
let admin: TestUser;
let listener: ReturnType<typeof listen>;
let slowSource: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  h = await createHarness();
  admin = await addUser(h, { tier: "enterprise", role: "admin" });
  listener = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0, idleTimeoutSeconds: 1 });
  slowSource = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch() {
      await Bun.sleep(sourceDelayMs);
      return new Response(sourceList, { headers: { "content-type": "text/plain" } });
    },
  });
});
afterAll(async () => {
  slowSource.stop(true);
  listener.stop(true);
  await h.close();
});

describe("long admin requests and the idle timeout", () => {
  test("a feed refreshed from a source slower than the idle timeout answers once it is refreshed", async () => {
    const base = `http://127.0.0.1:${listener.port}/v1/admin/feeds`;
    const added = await fetch(base, {
      method: "POST",
      headers: { ...admin.jwt, "content-type": "application/json" },
      body: JSON.stringify({ name: "slow", url: `http://127.0.0.1:${slowSource.port}/list.txt`, category: "HACKING" }),
    });
    expect(added.status).toBe(201);
    sourceDelayMs = SLOW_SOURCE_MS;
    sourceList = "203.0.113.0/24\n198.51.100.7\n";
    // No body: the kind of request the idle timeout cuts (the snapshot job's run was cut at 10 s at 1 M addresses).
    const res = await fetch(`${base}/slow/refresh`, { method: "POST", headers: admin.jwt });
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).data).toMatchObject({ result: "updated", entries: 2, error: null });
  }, 60_000);
});
