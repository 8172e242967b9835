// The fan-out's budget is 2,000 deliveries a pass, counted by the deliveries its events make: events few or no
// subscriptions receive (a ping, an ip.reported event when the subscribers want only threat.detected) go a full
// batch a pass however many subscriptions exist.

import { afterEach, beforeEach, expect, test } from "bun:test";
import { ManualClock } from "../../../../src/domain/clock";
import { inTransaction, openMemoryStore, type Store } from "../../../../src/store/database";
import { outbox, users, webhookDeliveries } from "../../../../src/store/schema";
import { enqueueEvent } from "../../../../src/services/webhooks/outbox";
import { WebhookDispatcher } from "../../../../src/services/webhooks/dispatcher";
import { MAX_WEBHOOKS_PER_ACCOUNT, WebhookService } from "../../../../src/services/webhooks/subscriptions";

const SECRET = "test-secret-0123456789abcdef";
const T0 = Date.parse("2026-11-21T08:00:00.000Z");

let clock: ManualClock;
let store: Store;
let webhooks: WebhookService;
let dispatchers: WebhookDispatcher[];

function addUser(email: string): number {
  return store.db.insert(users).values({ email, passwordHash: "x", createdAt: T0, updatedAt: T0 }).returning().get().id;
}

function dispatcher(): WebhookDispatcher {
  const d = new WebhookDispatcher({ store, clock }, { log: () => {} }); // the defaults: 500 events, 2,000 deliveries
  dispatchers.push(d);
  return d;
}

function report(reportId: number): void {
  inTransaction(store, () =>
    enqueueEvent(store, "ip.reported", { ip: "203.0.113.7", category: "BRUTE_FORCE", confidence: 95, reporterId: 12, reportId }, clock.now()),
  );
}

/** 16 accounts of 25 subscriptions (400), each wanting only `events`; returns the first account and its first id. */
function fullAccounts(events: ("threat.detected" | "ping")[]): { user: number; first: number } {
  let first = { user: 0, first: 0 };
  for (let a = 0; a < 16; a++) {
    const user = addUser(`u${a}@example.com`);
    for (let i = 0; i < MAX_WEBHOOKS_PER_ACCOUNT; i++) {
      const w = webhooks.create(user, { url: `http://127.0.0.1:9/${a}/${i}`, events, secret: SECRET });
      if (a === 0 && i === 0) first = { user, first: Number(w.id) };
    }
  }
  return first;
}

beforeEach(() => {
  clock = new ManualClock(T0);
  store = openMemoryStore();
  webhooks = new WebhookService({ store, clock });
  dispatchers = [];
});

afterEach(async () => {
  for (const d of dispatchers) await d.stop();
  store.close();
});

test("events no subscription receives are dropped a full batch (500) a pass, however many subscriptions exist", () => {
  fullAccounts(["threat.detected"]);
  for (let i = 1; i <= 600; i++) report(i);

  // None of the 600 makes a delivery: the pass's 2,000-delivery budget is untouched.
  expect(dispatcher().fanOut()).toBe(500);
  expect(store.db.select().from(webhookDeliveries).all()).toHaveLength(0);
  expect(store.db.select().from(outbox).all()).toHaveLength(100);
});

test("pings to one subscription are fanned out a full batch (500) a pass: each is one delivery", () => {
  const { user, first } = fullAccounts(["ping"]);
  for (let i = 0; i < 600; i++) webhooks.ping(user, first);

  expect(dispatcher().fanOut()).toBe(500);
  expect(store.db.select().from(webhookDeliveries).all()).toHaveLength(500);
});
