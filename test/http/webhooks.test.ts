import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { ok, type Receiver, startReceiver, status } from "../support/webhook-receiver";

let h: Harness;
let alice: { id: number; auth: Record<string, string> };
let bob: { id: number; auth: Record<string, string> };
let apiKeyOfAlice: string;
let receiver: Receiver;

async function signIn(email: string) {
  const user = h.services.accounts.insert({ email, tier: "enterprise", role: "user", dailyLimit: null }, "not-a-real-hash");
  const token = await h.services.credentials.issueToken(user);
  return { id: user.id, auth: { authorization: `Bearer ${token.accessToken}` } };
}

beforeAll(async () => {
  h = await createHarness();
  alice = await signIn("alice@example.com");
  bob = await signIn("bob@example.com");
  apiKeyOfAlice = h.services.apiKeys.create(alice.id, "lookups").key;
  receiver = startReceiver();
});
afterAll(async () => {
  await receiver.stop();
  await h.close();
});
afterEach(() => receiver.respondWith(ok));

const create = (who: { auth: Record<string, string> }, json: unknown) => h.call("POST", "/v1/webhooks", { headers: who.auth, json });

describe("POST /v1/webhooks", () => {
  test("201 with the subscription and a generated secret, shown only here", async () => {
    const res = await create(alice, { url: receiver.url, events: ["ip.reported", "ip.verified"] });
    expect(res.status).toBe(201);
    const { success, data } = await bodyOf(res);
    expect(success).toBe(true);
    expect(Object.keys(data).sort()).toEqual(["active", "createdAt", "events", "id", "secret", "url"]);
    expect(data).toMatchObject({ url: receiver.url, events: ["ip.reported", "ip.verified"], active: true, createdAt: "2026-11-21T08:00:00.000Z" });
    expect(data.id).toMatch(/^\d+$/);
    expect(data.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const shown = await bodyOf(await h.call("GET", `/v1/webhooks/${data.id}`, { headers: alice.auth }));
    expect(shown.data).toEqual({
      id: data.id,
      url: receiver.url,
      events: ["ip.reported", "ip.verified"],
      active: true,
      createdAt: data.createdAt,
      updatedAt: data.createdAt,
    });
    const listed = await bodyOf(await h.call("GET", "/v1/webhooks", { headers: alice.auth }));
    expect(JSON.stringify(listed)).not.toContain(data.secret);
  });

  test("two subscriptions get different generated secrets; a given secret is kept", async () => {
    const a = (await bodyOf(await create(alice, { url: receiver.url, events: ["ping"] }))).data;
    const b = (await bodyOf(await create(alice, { url: receiver.url, events: ["ping"] }))).data;
    expect(a.secret).not.toBe(b.secret);
    const given = (await bodyOf(await create(alice, { url: receiver.url, events: ["ping"], secret: "my-own-secret-0123456789" }))).data;
    expect(given.secret).toBe("my-own-secret-0123456789");
  });

  test("every bad field is named in one 400 validation_failed", async () => {
    const res = await create(alice, { url: "ftp://example.com/x", events: ["ip.reported", "ip.exploded"], secret: "short" });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({
      success: false,
      error: "The request is not valid",
      code: "validation_failed",
      details: [
        { field: "url", message: "must use http or https" },
        { field: "events", message: 'unknown event "ip.exploded"; allowed values: ip.reported, ip.verified, threat.detected, ping' },
        { field: "secret", message: "must be at least 16 characters" },
      ],
    });
  });

  test.each([
    ["no url", { events: ["ping"] }, "url"],
    ["no events", { url: "https://example.com/" }, "events"],
    ["empty events", { url: "https://example.com/", events: [] }, "events"],
  ])("%s is refused", async (_, json, field) => {
    const res = await create(alice, json);
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).details.map((d: { field: string }) => d.field)).toEqual([field]);
  });

  test("an account keeps at most 25 subscriptions: the next is 400 validation_failed and changes nothing", async () => {
    const carol = await signIn("carol@example.com");
    for (let i = 0; i < 25; i++) expect((await create(carol, { url: `${receiver.url}/${i}`, events: ["ping"] })).status).toBe(201);
    const refused = await create(carol, { url: `${receiver.url}/25`, events: ["ping"] });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ success: false, code: "validation_failed", details: [{ field: "url" }] });
    const listed = (await (await h.call("GET", "/v1/webhooks", { headers: carol.auth })).json()) as { data: { id: string }[] };
    expect(listed.data).toHaveLength(25);
    // Another account is not held to carol's count; a deleted subscription makes room.
    const dave = await signIn("dave@example.com");
    expect((await create(dave, { url: `${receiver.url}/dave`, events: ["ping"] })).status).toBe(201);
    expect((await h.call("DELETE", `/v1/webhooks/${listed.data[0]!.id}`, { headers: carol.auth })).status).toBe(200);
    expect((await create(carol, { url: `${receiver.url}/25`, events: ["ping"] })).status).toBe(201);
  });

  test("a body that is not an object is 400 bad_request", async () => {
    const res = await create(alice, ["https://example.com/"]);
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).code).toBe("bad_request");
  });

  test("needs a user token: none is 401, an API key is 401 naming the login", async () => {
    expect((await h.call("POST", "/v1/webhooks", { json: { url: receiver.url, events: ["ping"] } })).status).toBe(401);
    const res = await h.call("GET", "/v1/webhooks", { headers: { "x-api-key": apiKeyOfAlice } });
    expect(res.status).toBe(401);
    expect((await bodyOf(res)).error).toContain("POST /v1/auth/login");
  });
});

describe("ownership", () => {
  test("a user lists only their own; another user's id is 404 for every verb", async () => {
    const mine = (await bodyOf(await create(bob, { url: receiver.url, events: ["threat.detected"] }))).data;
    const bobs = (await bodyOf(await h.call("GET", "/v1/webhooks", { headers: bob.auth }))).data;
    expect(bobs.map((w: { id: string }) => w.id)).toEqual([mine.id]);
    const alices = (await bodyOf(await h.call("GET", "/v1/webhooks", { headers: alice.auth }))).data;
    expect(alices.map((w: { id: string }) => w.id)).not.toContain(mine.id);

    for (const [method, path, json] of [
      ["GET", `/v1/webhooks/${mine.id}`, undefined],
      ["PATCH", `/v1/webhooks/${mine.id}`, { active: false }],
      ["PATCH", `/v1/webhooks/${mine.id}`, {}],
      ["DELETE", `/v1/webhooks/${mine.id}`, undefined],
      ["POST", `/v1/webhooks/${mine.id}/ping`, undefined],
      ["GET", `/v1/webhooks/${mine.id}/deliveries`, undefined],
      ["GET", `/v1/webhooks/${mine.id}/deliveries?limit=0`, undefined],
    ] as const) {
      const res = await h.call(method, path, { headers: alice.auth, json });
      expect([method, path, res.status]).toEqual([method, path, 404]);
      expect(await bodyOf(res)).toEqual({ success: false, error: "No such webhook", code: "not_found" });
    }
    // Untouched by all that.
    expect((await bodyOf(await h.call("GET", `/v1/webhooks/${mine.id}`, { headers: bob.auth }))).data.active).toBe(true);
  });

  test.each(["0", "abc", "1.5", "-1", "99999999"])("id %p that names no subscription is 404", async (id) => {
    const res = await h.call("GET", `/v1/webhooks/${id}`, { headers: alice.auth });
    expect(res.status).toBe(404);
  });
});

describe("PATCH and DELETE", () => {
  test("changes url, events, active and secret; answers without the secret", async () => {
    const hook = (await bodyOf(await create(alice, { url: "https://example.com/a", events: ["ip.reported"] }))).data;
    h.clock.advance(1_000);
    const res = await h.call("PATCH", `/v1/webhooks/${hook.id}`, {
      headers: alice.auth,
      json: { url: "https://example.com/b", events: ["threat.detected"], active: false, secret: "rotated-secret-0123456789" },
    });
    expect(res.status).toBe(200);
    const { data } = await bodyOf(res);
    expect(data).toEqual({
      id: hook.id,
      url: "https://example.com/b",
      events: ["threat.detected"],
      active: false,
      createdAt: hook.createdAt,
      updatedAt: "2026-11-21T08:00:01.000Z",
    });
  });

  test("an empty or bad change is 400 and changes nothing", async () => {
    const hook = (await bodyOf(await create(alice, { url: "https://example.com/a", events: ["ip.reported"] }))).data;
    const empty = await h.call("PATCH", `/v1/webhooks/${hook.id}`, { headers: alice.auth, json: {} });
    expect(empty.status).toBe(400);
    expect((await bodyOf(empty)).code).toBe("validation_failed");
    const bad = await h.call("PATCH", `/v1/webhooks/${hook.id}`, { headers: alice.auth, json: { url: "mailto:x@example.com", active: "yes" } });
    expect(bad.status).toBe(400);
    expect((await bodyOf(bad)).details.map((d: { field: string }) => d.field)).toEqual(["url", "active"]);
    expect((await bodyOf(await h.call("GET", `/v1/webhooks/${hook.id}`, { headers: alice.auth }))).data.url).toBe("https://example.com/a");
  });

  test("DELETE removes it: later reads are 404", async () => {
    const hook = (await bodyOf(await create(alice, { url: receiver.url, events: ["ping"] }))).data;
    await h.call("POST", `/v1/webhooks/${hook.id}/ping`, { headers: alice.auth });
    await h.services.webhookDispatcher.tick();
    const res = await h.call("DELETE", `/v1/webhooks/${hook.id}`, { headers: alice.auth });
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({ success: true, data: { id: hook.id, deleted: true } });
    expect((await h.call("GET", `/v1/webhooks/${hook.id}`, { headers: alice.auth })).status).toBe(404);
    expect((await h.call("GET", `/v1/webhooks/${hook.id}/deliveries`, { headers: alice.auth })).status).toBe(404);
    expect((await h.call("DELETE", `/v1/webhooks/${hook.id}`, { headers: alice.auth })).status).toBe(404);
  });
});

describe("ping and deliveries", () => {
  test("ping is 202, reaches the real receiver signed, and shows in the deliveries with its attempt", async () => {
    const hook = (await bodyOf(await create(alice, { url: receiver.url, events: ["ip.reported"] }))).data;
    const before = receiver.requests.length;
    const res = await h.call("POST", `/v1/webhooks/${hook.id}/ping`, { headers: alice.auth });
    expect(res.status).toBe(202);
    expect(await bodyOf(res)).toEqual({
      success: true,
      data: { webhookId: hook.id, event: "ping", queuedAt: new Date(h.clock.now()).toISOString() },
    });

    await h.services.webhookDispatcher.tick();

    expect(receiver.requests.length).toBe(before + 1);
    const req = receiver.requests.at(-1)!;
    expect(req.headers.get("x-webhook-event")).toBe("ping");
    const expected = Buffer.from(createHmac("sha256", hook.secret).update(req.raw).digest("hex"));
    const given = Buffer.from(req.headers.get("x-webhook-signature") ?? "");
    expect(given.length === expected.length && timingSafeEqual(given, expected)).toBe(true);
    expect(JSON.parse(req.body)).toEqual({
      event: "ping",
      timestamp: new Date(h.clock.now()).toISOString(),
      data: { ip: null, category: null, confidence: null, reporter_id: null, webhookId: hook.id },
    });

    const listing = await h.call("GET", `/v1/webhooks/${hook.id}/deliveries`, { headers: alice.auth });
    expect(listing.status).toBe(200);
    const { data, pagination } = await bodyOf(listing);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 1 });
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({
      deliveryId: req.headers.get("x-webhook-delivery"),
      event: "ping",
      status: "delivered",
      attemptCount: 1,
      nextAttemptAt: null,
      lastStatusCode: 200,
      lastError: null,
      payload: JSON.parse(req.body),
    });
    expect(data[0].attempts).toHaveLength(1);
    expect(data[0].attempts[0]).toMatchObject({ attemptedAt: new Date(h.clock.now()).toISOString(), statusCode: 200, error: null });
    expect(typeof data[0].attempts[0].durationMs).toBe("number");
  });

  test("a failing receiver's delivery lists each attempt and the next one's time; pages by limit and offset", async () => {
    const hook = (await bodyOf(await create(alice, { url: receiver.url, events: ["ping"] }))).data;
    receiver.respondWith(status(500));
    for (let i = 0; i < 3; i++) {
      await h.call("POST", `/v1/webhooks/${hook.id}/ping`, { headers: alice.auth });
      h.clock.advance(1);
    }
    await h.services.webhookDispatcher.tick();
    const retryAt = h.clock.now() + 10_000;
    h.clock.advance(10_000);
    await h.services.webhookDispatcher.tick();

    const page = await bodyOf(await h.call("GET", `/v1/webhooks/${hook.id}/deliveries?limit=2&offset=1`, { headers: alice.auth }));
    expect(page.pagination).toEqual({ limit: 2, offset: 1, total: 3 });
    expect(page.data).toHaveLength(2);
    const all = (await bodyOf(await h.call("GET", `/v1/webhooks/${hook.id}/deliveries`, { headers: alice.auth }))).data;
    // Newest first; the page is the tail of the whole list.
    expect(page.data.map((d: { id: string }) => d.id)).toEqual(all.slice(1).map((d: { id: string }) => d.id));
    expect(Number(all[0].id)).toBeGreaterThan(Number(all[1].id));
    for (const d of all) {
      expect(d).toMatchObject({ status: "pending", attemptCount: 2, lastStatusCode: 500, lastError: "receiver answered HTTP 500" });
      expect(d.nextAttemptAt).toBe(new Date(retryAt + 60_000).toISOString());
      expect(d.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500]);
    }
  });

  test.each([["limit=0"], ["limit=101"], ["limit=x"], ["offset=-1"], ["offset=1.5"]])("?%s is 400 validation_failed", async (query) => {
    const hook = (await bodyOf(await create(alice, { url: receiver.url, events: ["ping"] }))).data;
    const res = await h.call("GET", `/v1/webhooks/${hook.id}/deliveries?${query}`, { headers: alice.auth });
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).code).toBe("validation_failed");
  });

  test("an inactive subscription cannot be pinged", async () => {
    const hook = (await bodyOf(await create(alice, { url: receiver.url, events: ["ping"] }))).data;
    await h.call("PATCH", `/v1/webhooks/${hook.id}`, { headers: alice.auth, json: { active: false } });
    const res = await h.call("POST", `/v1/webhooks/${hook.id}/ping`, { headers: alice.auth });
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).details).toEqual([{ field: "active", message: "the webhook is inactive; activate it with PATCH first" }]);
  });
});
