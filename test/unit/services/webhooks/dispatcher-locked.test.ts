// An attempt whose outcome cannot be written (another process, a CLI import, holds the write lock) keeps its slot
// and is written once the lock is free: the receiver that answered 2xx is not sent the delivery again, and the
// attempt it answered is recorded (contract 7: "Each attempt is recorded").
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../../../src/domain/clock";
import { inTransaction, openStore, SERVER_BUSY_TIMEOUT_MS } from "../../../../src/store/database";
import { users } from "../../../../src/store/schema";
import { enqueueEvent } from "../../../../src/services/webhooks/outbox";
import { WebhookDispatcher } from "../../../../src/services/webhooks/dispatcher";
import { WebhookService } from "../../../../src/services/webhooks/subscriptions";
import { startReceiver } from "../../../support/webhook-receiver";

const dir = mkdtempSync(join(tmpdir(), "abuse-intel-webhook-locked-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("an answered attempt is recorded once and not sent again after another process's write lock", async () => {
  const clock = new ManualClock(Date.parse("2026-11-21T08:00:00.000Z"));
  // As `serve` opens it: a short busy wait.
  const store = openStore(dir, { sync: "normal", busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS });
  const receiver = startReceiver(); // answers 200
  const logs: string[] = [];
  const dispatcher = new WebhookDispatcher({ store, clock }, { log: (m) => logs.push(m) });
  const userId = store.db.insert(users).values({ email: "u@x.test", passwordHash: "x", createdAt: 0, updatedAt: 0 }).returning().get().id;
  new WebhookService({ store, clock }).create(userId, { url: receiver.url, events: ["ip.reported"], secret: "s".repeat(20) });
  inTransaction(store, () => enqueueEvent(store, "ip.reported", { ip: "203.0.113.7", category: "SSH", confidence: 50, reporterId: userId, reportId: 1 }, clock.now()));
  dispatcher.fanOut();

  // Another process (a CLI import) takes the write lock.
  const cli = new Database(join(dir, "abuse-intel.db"));
  cli.exec("BEGIN IMMEDIATE");
  await dispatcher.tick(); // sends; the receiver answers 200; recording it fails (busy)
  expect(receiver.requests.length).toBe(1);
  await Bun.sleep(1000);
  cli.exec("COMMIT"); // the import is done after ~1 s
  cli.close();

  await Bun.sleep(5_200); // past the dispatcher's 5 s pause
  await dispatcher.tick();
  const deliveryIds = receiver.requests.map((r) => r.headers.get("x-webhook-delivery"));
  const attempts = store.sqlite.query("SELECT count(*) AS n FROM delivery_attempts").get() as { n: number };
  expect(new Set(deliveryIds).size).toBe(1);
  expect(logs.some((line) => line.includes("trying again in 5 s"))).toBe(true);
  await dispatcher.stop();
  await receiver.stop();
  store.close();
  // The receiver answered 200 once: it should not be sent again, and that attempt should be in the log.
  expect(receiver.requests.length).toBe(1);
  expect(attempts.n).toBe(receiver.requests.length);
}, 20_000);
