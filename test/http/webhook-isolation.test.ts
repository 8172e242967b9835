// A receiver that never answers must not slow the API (contract section 7). The server runs for real here: the
// real services with the real clock and the dispatcher's background timer, behind Bun.serve on 127.0.0.1.
// Lookups are timed while reports stream in, first with no subscription, then with a subscription whose
// receiver accepts connections and never answers, so every delivery hangs until its timeout. The bound is
// generous (median with the hang < 3 × median without + 2 ms): it catches an API that waits for deliveries or
// stalls behind the dispatcher, not noise.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { defaultConfig } from "../../src/config";
import { systemClock } from "../../src/domain/clock";
import { createApp } from "../../src/http/app";
import { listen } from "../../src/http/server";
import { hashPassword } from "../../src/services/accounts/passwords";
import { type Services } from "../../src/services/services";
import { createServices } from "../../src/app/create-services";
import { openStore, type Store } from "../../src/store/database";
import { never, type Receiver, startReceiver } from "../support/webhook-receiver";

const LOOKUPS = 300;

let dir: string;
let store: Store;
let services: Services;
let server: Server<undefined>;
let base: string;
let receiver: Receiver;
let userId: number;
let token: string;
let apiKey: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-isolation-"));
  store = openStore(dir);
  const config = { ...defaultConfig(), dataDir: dir, jwtSecret: "test-secret-test-secret-test-secret-0123", syncMode: "normal" as const };
  services = await createServices({ config, clock: systemClock, store, webhookDispatcher: { autoStart: true, log: () => {} } });
  server = listen(services, createApp(services), { hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.port}`;
  receiver = startReceiver(never);
  const user = services.accounts.insert({ email: "reporter@example.test", tier: "enterprise", role: "user", dailyLimit: null }, await hashPassword("not used here"));
  userId = user.id;
  token = (await services.credentials.issueToken(user)).accessToken;
  apiKey = services.apiKeys.create(user.id, "lookups").key;
});

afterAll(async () => {
  server?.stop(true);
  await services?.stop();
  await receiver?.stop();
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

let nextAddress = 0;
/** A new reportable address each time (10.0.0.0/8 is private, hence reportable). */
const freshAddress = () => {
  const n = ++nextAddress;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};

/** Reports new addresses one after another until `stop` is set; returns what was reported and the statuses. */
async function reportStream(stop: { done: boolean }): Promise<{ ips: string[]; statuses: number[] }> {
  const ips: string[] = [];
  const statuses: number[] = [];
  while (!stop.done) {
    const ip = freshAddress();
    const res = await fetch(`${base}/v1/ip/report`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ip, category: "ssh", severity: 4 }),
    });
    await res.arrayBuffer();
    ips.push(ip);
    statuses.push(res.status);
  }
  return { ips, statuses };
}

/** Times `LOOKUPS` sequential reputation lookups over HTTP while reports stream in; checks each answer. */
async function timedLookups(): Promise<{ median: number; reported: { ips: string[]; statuses: number[] } }> {
  const stop = { done: false };
  const stream = reportStream(stop);
  const times: number[] = [];
  for (let i = 0; i < LOOKUPS; i++) {
    const ip = i % 2 === 0 ? "8.8.8.8" : `10.200.0.${i % 250}`;
    const started = performance.now();
    const res = await fetch(`${base}/v1/ip/${ip}/reputation`, { headers: { "x-api-key": apiKey } });
    const body = (await res.json()) as { data: { ipAddress: string; reputationScore: number } };
    times.push(performance.now() - started);
    expect(res.status).toBe(200);
    expect(body.data).toMatchObject({ ipAddress: ip, reputationScore: 100 });
  }
  stop.done = true;
  const reported = await stream;
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)], reported };
}

test("a receiver that never answers does not raise lookup latency, and the API stays correct", async () => {
  await timedLookups(); // warm-up: JIT, connections, caches

  const without = await timedLookups();

  services.webhooks.create(userId, { url: receiver.url, events: ["ip.reported"], secret: null });
  const withHang = await timedLookups();

  // The hang was real: deliveries were in flight at the receiver, unanswered, while the lookups ran.
  expect(receiver.requests.length).toBeGreaterThan(0);
  expect(receiver.inProgress).toBeGreaterThan(0);
  expect(services.webhookDispatcher.inFlightCount).toBeGreaterThan(0);
  // Every report of both phases was accepted, and each reported address shows its report.
  for (const phase of [without, withHang]) {
    expect(phase.reported.ips.length).toBeGreaterThan(10);
    expect(new Set(phase.reported.statuses)).toEqual(new Set([201]));
  }
  for (const ip of withHang.reported.ips.slice(-20)) {
    const body = (await (await fetch(`${base}/v1/ip/${ip}/reputation`, { headers: { "x-api-key": apiKey } })).json()) as {
      data: { totalReports: number; categories: string[] };
    };
    expect(body.data).toMatchObject({ totalReports: 1, categories: ["SSH"] });
  }

  console.log(
    `lookup median: ${without.median.toFixed(3)} ms without a hanging receiver, ${withHang.median.toFixed(3)} ms with one ` +
      `(${withHang.reported.ips.length} reports streamed, ${receiver.requests.length} deliveries hanging or timed out)`,
  );
  expect(withHang.median).toBeLessThan(3 * without.median + 2);
}, 60_000);
