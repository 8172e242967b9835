import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { ManualClock } from "../../../../src/domain/clock";
import { inTransaction, openMemoryStore, openStore, type Store } from "../../../../src/store/database";
import { deliveryAttempts, outbox, users, webhookDeliveries } from "../../../../src/store/schema";
import { enqueueEvent } from "../../../../src/services/webhooks/outbox";
import { WebhookDispatcher, type DispatcherOptions } from "../../../../src/services/webhooks/dispatcher";
import { WebhookService } from "../../../../src/services/webhooks/subscriptions";
import { never, ok, type Receiver, startReceiver, status } from "../../../support/webhook-receiver";

const SECRET = "test-secret-0123456789abcdef";
const T0 = Date.parse("2026-11-21T08:00:00.000Z");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let clock: ManualClock;
let store: Store;
let webhooks: WebhookService;
let receivers: Receiver[];
let dispatchers: WebhookDispatcher[];

function addUser(s: Store, email: string): number {
  return s.db.insert(users).values({ email, passwordHash: "x", createdAt: T0, updatedAt: T0 }).returning().get().id;
}

function dispatcher(options: Partial<DispatcherOptions> = {}, on: Store = store): WebhookDispatcher {
  const d = new WebhookDispatcher({ store: on, clock }, { log: () => {}, ...options });
  dispatchers.push(d);
  return d;
}

function receiver(handler = ok): Receiver {
  const r = startReceiver(handler);
  receivers.push(r);
  return r;
}

/** An ip.reported event written the way producers write it: inside their own transaction. */
function report(on: Store = store, reportId = 1, ip = "203.0.113.7"): number {
  return inTransaction(on, () =>
    enqueueEvent(on, "ip.reported", { ip, category: "BRUTE_FORCE", confidence: 95, reporterId: 12, reportId }, clock.now()),
  );
}

const deliveriesOf = (s: Store = store) => s.db.select().from(webhookDeliveries).orderBy(webhookDeliveries.id).all();
const attemptsOf = (rowId: number, s: Store = store) =>
  s.db.select().from(deliveryAttempts).where(eq(deliveryAttempts.deliveryRowId, rowId)).orderBy(deliveryAttempts.id).all();

function verifies(secret: string, raw: Uint8Array, signature: string | null): boolean {
  const expected = Buffer.from(createHmac("sha256", secret).update(raw).digest("hex"));
  const given = Buffer.from(signature ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

beforeEach(() => {
  clock = new ManualClock(T0);
  store = openMemoryStore();
  webhooks = new WebhookService({ store, clock });
  receivers = [];
  dispatchers = [];
});

afterEach(async () => {
  for (const d of dispatchers) await d.stop();
  for (const r of receivers) await r.stop();
  store.close();
});

describe("a delivery", () => {
  test("POSTs the exact body with the four headers, signed with the subscription's secret", async () => {
    const r = receiver();
    const user = addUser(store, "a@example.com");
    webhooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    report();
    clock.advance(1_500); // the dispatcher runs a little after the event: the body keeps the event's time

    const summary = await dispatcher().tick();

    expect(summary).toEqual({ events: 1, deliveriesCreated: 1, attempts: 1, delivered: 1, retried: 0, failed: 0 });
    expect(r.requests).toHaveLength(1);
    const req = r.requests[0];
    const body =
      '{"event":"ip.reported","timestamp":"2026-11-21T08:00:00.000Z","data":{"ip":"203.0.113.7","category":"brute_force","confidence":95,"reporter_id":"12","reportId":"1"}}';
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/hook");
    expect(req.body).toBe(body);
    expect(req.headers.get("content-type")).toBe("application/json");
    expect(req.headers.get("x-webhook-event")).toBe("ip.reported");
    expect(req.headers.get("x-webhook-timestamp")).toBe("2026-11-21T08:00:01.500Z");
    const [row] = deliveriesOf();
    expect(req.headers.get("x-webhook-delivery")).toBe(row.deliveryId);
    expect(row.deliveryId).toMatch(UUID);
    expect(req.headers.get("x-webhook-signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(verifies(SECRET, req.raw, req.headers.get("x-webhook-signature"))).toBe(true);
    expect(verifies("another-secret-0123456789", req.raw, req.headers.get("x-webhook-signature"))).toBe(false);

    expect(row).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 200, lastError: null, body, event: "ip.reported" });
    const attempts = attemptsOf(row.id);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attemptedAt: T0 + 1_500, statusCode: 200, error: null });
    expect(attempts[0].durationMs).toBeGreaterThanOrEqual(0);
  });

  test("any 2xx is success; a redirect is not followed and counts as a failure", async () => {
    const user = addUser(store, "a@example.com");
    const accepted = receiver(status(204));
    const moved = receiver(() => new Response(null, { status: 302, headers: { location: accepted.url } }));
    webhooks.create(user, { url: accepted.url, events: ["ip.reported"], secret: SECRET });
    webhooks.create(user, { url: moved.url, events: ["ip.reported"], secret: SECRET });
    report();

    const summary = await dispatcher().tick();

    expect(summary).toMatchObject({ attempts: 2, delivered: 1, retried: 1 });
    expect(accepted.requests).toHaveLength(1); // only its own delivery: the redirect was not followed
    const [good, redirected] = deliveriesOf();
    expect(good).toMatchObject({ status: "delivered", lastStatusCode: 204 });
    expect(redirected).toMatchObject({ status: "pending", lastStatusCode: 302, lastError: "receiver answered HTTP 302" });
  });
});

describe("fan-out", () => {
  test("every matching active subscription of any user gets its own delivery id and the same body bytes", async () => {
    const r = receiver();
    const alice = addUser(store, "alice@example.com");
    const bob = addUser(store, "bob@example.com");
    const a = webhooks.create(alice, { url: `${r.url}?who=a`, events: ["ip.reported"], secret: SECRET });
    const b = webhooks.create(bob, { url: `${r.url}?who=b`, events: ["ip.verified", "ip.reported"], secret: SECRET });
    webhooks.create(bob, { url: `${r.url}?who=threats`, events: ["threat.detected"], secret: SECRET });
    const inactive = webhooks.create(alice, { url: `${r.url}?who=inactive`, events: ["ip.reported"], secret: SECRET });
    webhooks.update(alice, Number(inactive.id), { active: false });

    report();

    const summary = await dispatcher().tick();

    expect(summary).toMatchObject({ events: 1, deliveriesCreated: 2, delivered: 2 });
    const rows = deliveriesOf();
    expect(rows.map((d) => d.webhookId).sort()).toEqual([Number(a.id), Number(b.id)].sort());
    expect(new Set(rows.map((d) => d.deliveryId)).size).toBe(2);
    expect(new Set(r.requests.map((q) => q.body)).size).toBe(1);
    expect(new Set(r.requests.map((q) => q.headers.get("x-webhook-delivery")))).toEqual(new Set(rows.map((d) => d.deliveryId)));
  });

  test("a disabled account's subscriptions get nothing while it is disabled", async () => {
    const r = receiver();
    const alice = addUser(store, "alice@example.com");
    const mallory = addUser(store, "mallory@example.com");
    webhooks.create(alice, { url: `${r.url}/alice`, events: ["ip.reported"], secret: SECRET });
    webhooks.create(mallory, { url: `${r.url}/mallory`, events: ["ip.reported"], secret: SECRET });
    const who = () => r.requests.map((q) => q.path.split("/").at(-1)).sort();

    report(store, 1);
    await dispatcher().tick();
    expect(who()).toEqual(["alice", "mallory"]);

    store.db.update(users).set({ disabled: true }).where(eq(users.id, mallory)).run();
    report(store, 2);
    await dispatcher().tick();
    expect(who()).toEqual(["alice", "alice", "mallory"]);
  });

  test("a ping goes to its subscription only, whatever the others subscribed to", async () => {
    const r = receiver();
    const user = addUser(store, "a@example.com");
    const target = webhooks.create(user, { url: `${r.url}?who=target`, events: ["threat.detected"], secret: SECRET });
    webhooks.create(user, { url: `${r.url}?who=other`, events: ["ip.reported", "ip.verified", "threat.detected", "ping"], secret: SECRET });

    webhooks.ping(user, Number(target.id));
    await dispatcher().tick();

    expect(r.requests).toHaveLength(1);
    expect(r.requests[0].headers.get("x-webhook-event")).toBe("ping");
    expect(JSON.parse(r.requests[0].body)).toEqual({
      event: "ping",
      timestamp: "2026-11-21T08:00:00.000Z",
      data: { ip: null, category: null, confidence: null, reporter_id: null, webhookId: target.id },
    });
    expect(deliveriesOf().map((d) => d.webhookId)).toEqual([Number(target.id)]);
  });

  test("an event nobody subscribed to leaves nothing behind", async () => {
    const user = addUser(store, "a@example.com");
    webhooks.create(user, { url: "http://127.0.0.1:9/", events: ["threat.detected"], secret: SECRET });
    report();
    expect(store.db.select().from(outbox).all()).toHaveLength(1);

    expect(await dispatcher().tick()).toMatchObject({ events: 1, deliveriesCreated: 0, attempts: 0 });
    expect(store.db.select().from(outbox).all()).toHaveLength(0);
    expect(deliveriesOf()).toHaveLength(0);
  });

  test("an event rolled back with its producer's transaction is never sent", async () => {
    const r = receiver();
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    expect(() =>
      inTransaction(store, () => {
        enqueueEvent(store, "ip.reported", { ip: "203.0.113.7", category: "SPAM", confidence: 5, reporterId: 1, reportId: 1 }, clock.now());
        throw new Error("the report failed");
      }),
    ).toThrow("the report failed");

    expect(await dispatcher().tick()).toMatchObject({ events: 0, attempts: 0 });
    expect(r.requests).toHaveLength(0);
  });

  test("a pass makes at most fanOutDeliveries deliveries however many subscriptions receive each event", () => {
    const users = [addUser(store, "a@example.com"), addUser(store, "b@example.com")];
    for (let i = 0; i < 40; i++) webhooks.create(users[i % 2]!, { url: `http://127.0.0.1:9/${i}`, events: ["ip.reported"], secret: SECRET });
    for (let i = 1; i <= 25; i++) report(store, i);
    const d = dispatcher({ fanOutBatch: 500, fanOutDeliveries: 100 });

    // 100 deliveries / 40 subscriptions: two events a pass; the outbox empties over passes all the same.
    expect(d.fanOut()).toBe(2);
    expect(deliveriesOf()).toHaveLength(80);
    let passes = 1;
    while (d.fanOut() > 0) passes++;
    expect(passes).toBe(13);
    expect(deliveriesOf()).toHaveLength(25 * 40);
  });

  test("events fan out in batches until the outbox is empty", async () => {
    const r = receiver();
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    for (let i = 1; i <= 25; i++) report(store, i);

    const summary = await dispatcher({ fanOutBatch: 10 }).tick();

    expect(summary).toMatchObject({ events: 25, deliveriesCreated: 25, delivered: 25 });
    expect(new Set(r.requests.map((q) => JSON.parse(q.body).data.reportId)).size).toBe(25);
  });
});

describe("retries", () => {
  test("a failing receiver is retried after 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, then the delivery fails", async () => {
    const r = receiver(status(500));
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    report();
    const d = dispatcher();
    const waits = [10_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 43_200_000];

    expect(await d.tick()).toMatchObject({ attempts: 1, retried: 1 });
    let attemptAt = T0;
    for (const [i, wait] of waits.entries()) {
      const row = deliveriesOf()[0];
      expect(row).toMatchObject({ status: "pending", attempts: i + 1, nextAttemptAt: attemptAt + wait, lastStatusCode: 500 });
      // One millisecond early: nothing is sent.
      clock.set(attemptAt + wait - 1);
      expect(await d.tick()).toMatchObject({ attempts: 0 });
      clock.set(attemptAt + wait);
      expect(await d.tick()).toMatchObject({ attempts: 1 });
      attemptAt += wait;
    }

    const [row] = deliveriesOf();
    expect(row).toMatchObject({ status: "failed", attempts: 8, lastStatusCode: 500, lastError: "receiver answered HTTP 500" });
    const attempts = attemptsOf(row.id);
    expect(attempts.map((a) => a.attemptedAt)).toEqual([0, ...waits].map((_, i) => T0 + waits.slice(0, i).reduce((s, w) => s + w, 0)));
    expect(attempts.every((a) => a.statusCode === 500 && a.error === "receiver answered HTTP 500")).toBe(true);

    // The same delivery id and the same bytes every time; nothing more after the end.
    expect(r.requests).toHaveLength(8);
    expect(new Set(r.requests.map((q) => q.headers.get("x-webhook-delivery")))).toEqual(new Set([row.deliveryId]));
    expect(new Set(r.requests.map((q) => q.body)).size).toBe(1);
    clock.advance(7 * 86_400_000);
    expect(await d.tick()).toMatchObject({ attempts: 0 });
    expect(r.requests).toHaveLength(8);
  });

  test("a receiver that recovers gets the retry and the delivery ends delivered", async () => {
    const r = receiver(status(503));
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    report();
    const d = dispatcher();
    await d.tick();
    r.respondWith(ok);
    clock.advance(10_000);

    expect(await d.tick()).toMatchObject({ attempts: 1, delivered: 1 });
    const [row] = deliveriesOf();
    expect(row).toMatchObject({ status: "delivered", attempts: 2, lastStatusCode: 200, lastError: null });
    expect(attemptsOf(row.id).map((a) => a.statusCode)).toEqual([503, 200]);
  });

  test("a receiver that is not listening is recorded with the connection error and no status", async () => {
    const r = receiver();
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    await r.stop();
    report();

    expect(await dispatcher().tick()).toMatchObject({ attempts: 1, retried: 1 });
    const [row] = deliveriesOf();
    expect(row).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: null, nextAttemptAt: T0 + 10_000 });
    expect(row.lastError).toBeString();
    expect(row.lastError!.length).toBeGreaterThan(0);
    expect(attemptsOf(row.id)[0]).toMatchObject({ statusCode: null, error: row.lastError });
  });

  test("a retry is signed with the secret in force when it is sent", async () => {
    const r = receiver(status(500));
    const user = addUser(store, "a@example.com");
    const hook = webhooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    report();
    const d = dispatcher();
    await d.tick();
    const rotated = "rotated-secret-abcdefghijklmnop";
    webhooks.update(user, Number(hook.id), { secret: rotated });
    clock.advance(10_000);
    await d.tick();

    expect(verifies(SECRET, r.requests[0].raw, r.requests[0].headers.get("x-webhook-signature"))).toBe(true);
    expect(verifies(rotated, r.requests[1].raw, r.requests[1].headers.get("x-webhook-signature"))).toBe(true);
    expect(verifies(SECRET, r.requests[1].raw, r.requests[1].headers.get("x-webhook-signature"))).toBe(false);
  });

  test("a deactivated subscription's deliveries wait until it is active again", async () => {
    const r = receiver();
    const user = addUser(store, "a@example.com");
    const hook = webhooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    const d = dispatcher();
    report();
    d.fanOut();
    webhooks.update(user, Number(hook.id), { active: false });
    expect(await d.tick()).toMatchObject({ attempts: 0 });
    webhooks.update(user, Number(hook.id), { active: true });
    expect(await d.tick()).toMatchObject({ attempts: 1, delivered: 1 });
  });
});

describe("slow and dead receivers", () => {
  test("a receiver that never answers is timed out, recorded and rescheduled", async () => {
    const r = receiver(never);
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    report();

    const summary = await dispatcher({ timeoutMs: 200 }).tick();

    expect(summary).toMatchObject({ attempts: 1, retried: 1 });
    expect(r.requests).toHaveLength(1);
    const [row] = deliveriesOf();
    expect(row).toMatchObject({ status: "pending", lastStatusCode: null, lastError: "timed out after 200 ms", nextAttemptAt: T0 + 10_000 });
    expect(attemptsOf(row.id)[0].durationMs).toBeGreaterThanOrEqual(190);
  });

  test("a hung receiver holds only its own slots: another subscription is served meanwhile", async () => {
    const hung = receiver(never);
    const user = addUser(store, "a@example.com");
    webhooks.create(user, { url: hung.url, events: ["ip.reported"], secret: SECRET });
    let recordedWhenGoodWasDone: number | null = null;
    const good = receiver(() => {
      if (good.requests.length === 5) recordedWhenGoodWasDone = store.db.select().from(deliveryAttempts).all().length;
      return new Response("ok");
    });
    webhooks.create(user, { url: good.url, events: ["ip.reported"], secret: SECRET });
    for (let i = 1; i <= 5; i++) report(store, i);
    const d = dispatcher({ timeoutMs: 1_000, maxInFlight: 8, maxInFlightPerWebhook: 4 });

    const summary = await d.tick();

    expect(summary).toMatchObject({ attempts: 10, delivered: 5, retried: 5 });
    expect(good.requests).toHaveLength(5);
    // All five good deliveries went out before the hung ones' first timeouts were recorded: at most the good
    // ones' own outcomes had been written by then.
    expect(recordedWhenGoodWasDone).not.toBeNull();
    expect(recordedWhenGoodWasDone!).toBeLessThanOrEqual(4);
    const hungRows = deliveriesOf().filter((row) => row.lastError !== null);
    expect(hungRows).toHaveLength(5);
    expect(hungRows.every((row) => row.lastError === "timed out after 1000 ms")).toBe(true);
    // The hung subscription had four slots: its fifth request waited for one of them to time out.
    expect(hung.requests).toHaveLength(5);
    expect(hung.requests[4].receivedAt - hung.requests[3].receivedAt).toBeGreaterThanOrEqual(900);
  });

  test("hung receivers' backlogs do not hold back a healthy subscriber's newer event: it gets a slot at once", async () => {
    const user = addUser(store, "a@example.com");
    const [hungA, hungB] = [receiver(never), receiver(never)];
    webhooks.create(user, { url: hungA.url, events: ["ip.reported"], secret: SECRET });
    webhooks.create(user, { url: hungB.url, events: ["ip.reported"], secret: SECRET });
    for (let i = 1; i <= 8; i++) report(store, i);
    const d = dispatcher({ timeoutMs: 2_000, maxInFlight: 8, maxInFlightPerWebhook: 4 });
    d.fanOut();
    // The healthy subscription's one delivery is the newest: last in line by age behind sixteen hung ones.
    const whenHealthyGotIt: { recorded: number; inFlight: number }[] = [];
    const healthy = receiver(() => {
      whenHealthyGotIt.push({ recorded: store.db.select().from(deliveryAttempts).all().length, inFlight: d.inFlightCount });
      return new Response("ok");
    });
    webhooks.create(user, { url: healthy.url, events: ["ip.reported"], secret: SECRET });
    report(store, 9);

    d.start();
    await healthy.waitFor(1);

    // It went out in the first wave, in one of the eight slots beside seven hung attempts, not after any of them
    // timed out (before: after two rounds of timeouts, the two hung subscriptions holding all eight slots).
    expect(whenHealthyGotIt).toEqual([{ recorded: 0, inFlight: 8 }]);
  });

  test("however many receivers hang, once they have failed they hold at most half the slots: a new event goes out at once", async () => {
    const user = addUser(store, "a@example.com");
    const hung = Array.from({ length: 9 }, () => receiver(never)); // more than the eight slots
    for (const r of hung) webhooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    // 54 first attempts, seconds of work for eight slots (the clock stands still: no retry comes due).
    for (let i = 1; i <= 6; i++) report(store, i);
    const recorded = () => store.db.select().from(deliveryAttempts).all().length;
    const failedSubscriptions = () => new Set(deliveriesOf().filter((row) => row.lastError !== null).map((row) => row.webhookId)).size;
    const whenHealthyGotIt: { recorded: number; inFlight: number }[] = [];
    const healthy = receiver(() => {
      whenHealthyGotIt.push({ recorded: recorded(), inFlight: d.inFlightCount });
      return new Response("ok");
    });
    webhooks.create(user, { url: healthy.url, events: ["ip.verified"], secret: SECRET });
    const d = dispatcher({ timeoutMs: 500, maxInFlight: 8, maxInFlightPerWebhook: 4 });

    d.start();
    // Every hung subscription's attempts have timed out once (in two waves: nine subscriptions, eight slots), and
    // the last of them have been recorded (they time out within a few milliseconds of each other).
    for (let i = 0; i < 200 && (failedSubscriptions() < 9 || d.inFlightCount > 4); i++) await Bun.sleep(10);
    await Bun.sleep(100);
    expect({ failed: failedSubscriptions(), inFlight: d.inFlightCount }).toEqual({ failed: 9, inFlight: 4 });
    const before = recorded();
    inTransaction(store, () =>
      enqueueEvent(store, "ip.verified", { ip: "203.0.113.9", category: "SSH", confidence: 50, reporterId: 2, reportId: 7 }, clock.now()),
    );
    d.nudge();
    await healthy.waitFor(1);

    // It took one of the free slots at once, with no hung attempt timed out first (before: all eight slots hung,
    // refilled as each timed out, and it waited for one).
    expect(whenHealthyGotIt).toEqual([{ recorded: before, inFlight: 5 }]);
  });

  test("no more than maxInFlight requests at once, and no more than maxInFlightPerWebhook per subscription", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = async () => {
      await gate;
      return new Response("ok");
    };
    const [busy, r2, r3] = [receiver(held), receiver(held), receiver(held)];
    const user = addUser(store, "a@example.com");
    webhooks.create(user, { url: busy.url, events: ["ip.reported"], secret: SECRET });
    webhooks.create(user, { url: r2.url, events: ["ip.verified"], secret: SECRET });
    const third = webhooks.create(user, { url: r3.url, events: ["threat.detected"], secret: SECRET });
    // Ten deliveries for the busy subscription, three and one for the others: the slots left over by the others
    // go to the busy one up to its cap.
    for (let i = 1; i <= 10; i++) report(store, i);
    for (let i = 11; i <= 13; i++) {
      inTransaction(store, () =>
        enqueueEvent(store, "ip.verified", { ip: "203.0.113.9", category: "SSH", confidence: 50, reporterId: 2, reportId: i }, clock.now()),
      );
    }
    webhooks.ping(user, Number(third.id));
    const d = dispatcher({ maxInFlight: 8, maxInFlightPerWebhook: 4 });

    const ticking = d.tick();
    const total = () => busy.inProgress + r2.inProgress + r3.inProgress;
    for (let i = 0; i < 400 && total() < 8; i++) await Bun.sleep(5);
    await Bun.sleep(100); // time for a ninth request, were one let through
    expect(total()).toBe(8);
    expect(d.inFlightCount).toBe(8);
    expect(busy.inProgress).toBe(4);
    release();
    expect(await ticking).toMatchObject({ attempts: 14, delivered: 14 });
    expect([busy, r2, r3].map((r) => r.requests.length)).toEqual([10, 3, 1]);
    expect(busy.maxInProgress).toBe(4);
  });
});

describe("the background timer", () => {
  test("after start() an event goes out without a tick; after stop() nothing more is sent", async () => {
    const r = receiver();
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    const d = dispatcher({ intervalMs: 20 });
    d.start();
    expect(d.running).toBe(true);
    report(store, 1);
    d.nudge();
    await r.waitFor(1);
    // The receiver has the request; the dispatcher records the answer a moment later (stop() would abandon an
    // attempt still in flight, by design, so it goes out again after a restart).
    for (let waited = 0; deliveriesOf()[0]?.status !== "delivered" && waited < 5000; waited += 10) await Bun.sleep(10);

    await d.stop();
    expect(d.running).toBe(false);
    report(store, 2);
    await Bun.sleep(100);
    expect(r.requests).toHaveLength(1);
    expect(deliveriesOf()[0]).toMatchObject({ status: "delivered" });
  });

  test("without start() nothing happens until tick()", async () => {
    const r = receiver();
    webhooks.create(addUser(store, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    const d = dispatcher({ intervalMs: 20 });
    report();
    d.nudge();
    await Bun.sleep(100);
    expect(r.requests).toHaveLength(0);
    await d.tick();
    expect(r.requests).toHaveLength(1);
  });
});

describe("at least once across a crash", () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-webhooks-"));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  /** A process's worth of state on the data directory. */
  function boot() {
    const s = openStore(dataDir);
    return { s, hooks: new WebhookService({ store: s, clock }) };
  }

  test("events committed but never fanned out are delivered after a restart", async () => {
    const r = receiver();
    const first = boot();
    first.hooks.create(addUser(first.s, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    report(first.s, 1);
    report(first.s, 2);
    first.s.close(); // the process dies before the dispatcher ran

    const second = boot();
    try {
      expect(await dispatcher({}, second.s).tick()).toMatchObject({ events: 2, delivered: 2 });
      expect(r.requests.map((q) => JSON.parse(q.body).data.reportId).sort()).toEqual(["1", "2"]);
    } finally {
      await dispatchers.pop()!.stop();
      second.s.close();
    }
  });

  test("fanned-out deliveries keep their delivery id across the restart", async () => {
    const r = receiver();
    const first = boot();
    first.hooks.create(addUser(first.s, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    report(first.s);
    dispatcher({}, first.s).fanOut();
    const [before] = deliveriesOf(first.s);
    await dispatchers.pop()!.stop();
    first.s.close();

    const second = boot();
    try {
      await dispatcher({}, second.s).tick();
      expect(r.requests).toHaveLength(1);
      expect(r.requests[0].headers.get("x-webhook-delivery")).toBe(before.deliveryId);
      expect(deliveriesOf(second.s)[0]).toMatchObject({ deliveryId: before.deliveryId, status: "delivered", attempts: 1 });
    } finally {
      await dispatchers.pop()!.stop();
      second.s.close();
    }
  });

  test("an attempt cut off by the crash is sent again with the same delivery id", async () => {
    const r = receiver(never);
    const first = boot();
    first.hooks.create(addUser(first.s, "a@example.com"), { url: r.url, events: ["ip.reported"], secret: SECRET });
    report(first.s);
    const d1 = dispatcher({}, first.s);
    void d1.tick();
    await r.waitFor(1); // the receiver got it, but the sender dies before hearing back
    await d1.stop();
    first.s.close();

    r.respondWith(ok);
    const second = boot();
    try {
      expect(await dispatcher({}, second.s).tick()).toMatchObject({ events: 0, attempts: 1, delivered: 1 });
      expect(r.requests).toHaveLength(2);
      const ids = r.requests.map((q) => q.headers.get("x-webhook-delivery"));
      expect(ids[0]).toMatch(UUID);
      expect(ids[1]).toBe(ids[0]);
      expect(r.requests[1].body).toBe(r.requests[0].body);
      const [row] = deliveriesOf(second.s);
      expect(row).toMatchObject({ status: "delivered", attempts: 1 });
      expect(attemptsOf(row.id, second.s)).toHaveLength(1);
    } finally {
      await dispatchers.pop()!.stop();
      second.s.close();
    }
  });
});

describe("a subscription's failing state across a restart", () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-webhooks-failing-"));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  test("hung receivers that failed before the restart are capped from the first attempt after it: a healthy subscriber gets a slot at once", async () => {
    const [hungA, hungB] = [receiver(never), receiver(never)];
    const first = openStore(dataDir);
    const firstHooks = new WebhookService({ store: first, clock });
    const user = addUser(first, "a@example.com");
    for (const r of [hungA, hungB]) firstHooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    report(first, 1);
    // Both hung subscriptions' first attempts time out and are recorded: they are failing.
    const d1 = dispatcher({ timeoutMs: 200, maxInFlight: 2, maxInFlightPerWebhook: 1 }, first);
    await d1.tick();
    expect(deliveriesOf(first).map((row) => row.lastError)).toEqual(["timed out after 200 ms", "timed out after 200 ms"]);
    await d1.stop();
    first.close();

    const second = openStore(dataDir);
    try {
      const healthy = receiver();
      new WebhookService({ store: second, clock }).create(user, { url: healthy.url, events: ["ip.verified"], secret: SECRET });
      clock.advance(60_000); // the hung subscriptions' retries are due, older than the healthy one's event
      inTransaction(second, () => enqueueEvent(second, "ip.verified", { ip: "203.0.113.9", category: "SSH", confidence: 50, reporterId: 2, reportId: 7 }, clock.now()));
      // Two slots, attempts that hang for 60 s: the failing subscriptions may hold one slot between them, so the
      // healthy one takes the other at once. Not known to be failing, both would take a slot first and the
      // healthy event wait for a timeout (60 s, beyond this test's wait).
      const d2 = dispatcher({ timeoutMs: 60_000, maxInFlight: 2, maxInFlightPerWebhook: 1 }, second);
      d2.start();
      await healthy.waitFor(1, 20_000);
      expect(hungA.requests.length + hungB.requests.length).toBe(3);
    } finally {
      await dispatchers.pop()!.stop();
      second.close();
    }
  }, 60_000);
});

describe("deleting a subscription", () => {
  test("takes its deliveries and attempts, and the events no other subscription still holds", async () => {
    const r = receiver();
    const user = addUser(store, "a@example.com");
    const first = webhooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    const second = webhooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    report();
    await dispatcher().tick();
    expect(deliveriesOf()).toHaveLength(2);

    webhooks.delete(user, Number(first.id));
    expect(deliveriesOf().map((d) => d.webhookId)).toEqual([Number(second.id)]);
    expect(store.db.select().from(deliveryAttempts).all()).toHaveLength(1);
    expect(store.db.select().from(outbox).all()).toHaveLength(1);

    webhooks.delete(user, Number(second.id));
    expect(deliveriesOf()).toHaveLength(0);
    expect(store.db.select().from(deliveryAttempts).all()).toHaveLength(0);
    expect(store.db.select().from(outbox).all()).toHaveLength(0);
  });

  test("an attempt under way when its subscription is deleted records nothing and breaks nothing", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const r = receiver(async () => {
      await gate;
      return new Response("ok");
    });
    const user = addUser(store, "a@example.com");
    const hook = webhooks.create(user, { url: r.url, events: ["ip.reported"], secret: SECRET });
    report();
    const d = dispatcher();
    const ticking = d.tick();
    await r.waitFor(1);
    webhooks.delete(user, Number(hook.id));
    release();

    expect(await ticking).toMatchObject({ attempts: 1, delivered: 0 });
    expect(deliveriesOf()).toHaveLength(0);
    expect(store.db.select().from(deliveryAttempts).all()).toHaveLength(0);
  });
});

describe("pruning", () => {
  test("finished deliveries older than the cutoff go with their attempts and outbox rows; pending ones stay", async () => {
    const good = receiver();
    const bad = receiver(status(500));
    const user = addUser(store, "a@example.com");
    webhooks.create(user, { url: good.url, events: ["ip.reported"], secret: SECRET });
    webhooks.create(user, { url: bad.url, events: ["ip.verified"], secret: SECRET });
    const d = dispatcher();
    report(store, 1);
    inTransaction(store, () =>
      enqueueEvent(store, "ip.verified", { ip: "203.0.113.8", category: "SSH", confidence: 50, reporterId: 2, reportId: 2 }, clock.now()),
    );
    await d.tick();
    clock.advance(60_000);

    expect(d.prune(clock.now() - 30_000)).toBe(1);
    const rows = deliveriesOf();
    expect(rows.map((r) => r.status)).toEqual(["pending"]);
    expect(store.db.select().from(deliveryAttempts).all()).toHaveLength(1);
    expect(store.db.select().from(outbox).all().map((o) => o.event)).toEqual(["ip.verified"]);
  });
});
