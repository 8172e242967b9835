import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { bodyOf, createHarness, type Harness } from "../support/harness";
import { addUser, type TestUser } from "../support/accounts";

let h: Harness;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  h = await createHarness();
  alice = await addUser(h, { email: "alice@example.com" });
  bob = await addUser(h, { email: "bob@example.com" });
});
afterAll(() => h.close());

/** Fresh tokens for every call: some tests move the clock by more than a token's lifetime. */
async function as(user: TestUser) {
  const { accessToken } = await h.services.credentials.issueToken(user.user);
  return { authorization: `Bearer ${accessToken}` };
}
const createKey = async (user: TestUser, name: unknown) => h.call("POST", "/v1/keys", { headers: await as(user), json: { name } });
const listKeys = async (user: TestUser) => (await bodyOf(await h.call("GET", "/v1/keys", { headers: await as(user) }))).data;
const whoami = (key: string) => h.call("GET", "/v1/auth/whoami", { headers: { "x-api-key": key } });

describe("POST /v1/keys", () => {
  test("creates a key shown once, in the contract's shape, that works at once", async () => {
    const res = await createKey(alice, "  firewall-1  ");
    expect(res.status).toBe(201);
    const body = await bodyOf(res);
    expect(body).toEqual({
      success: true,
      data: { id: expect.stringMatching(/^[1-9]\d*$/), name: "firewall-1", key: expect.stringMatching(/^aik_[0-9A-Za-z]{40}$/), prefix: expect.any(String), createdAt: new Date(h.clock.now()).toISOString() },
    });
    expect(body.data.prefix).toBe(body.data.key.slice(0, 12));
    const me = await whoami(body.data.key);
    expect(me.status).toBe(200);
    expect((await bodyOf(me)).data.email).toBe("alice@example.com");
  });

  test("only the SHA-256 of the key is stored", async () => {
    const { data } = await bodyOf(await createKey(alice, "hash check"));
    const row = h.store.sqlite.query<Record<string, unknown>, [number]>("SELECT * FROM api_keys WHERE id = ?").get(Number(data.id))!;
    expect(row.key_hash).toBe(createHash("sha256").update(data.key).digest("hex"));
    expect(Object.values(row)).not.toContain(data.key);
  });

  test("two keys are never the same", async () => {
    const a = (await bodyOf(await createKey(alice, "a"))).data.key;
    const b = (await bodyOf(await createKey(alice, "b"))).data.key;
    expect(a).not.toBe(b);
  });

  test.each([
    [undefined, "is required and must be a string"],
    ["", "must not be empty"],
    ["   ", "must not be empty"],
    [42, "is required and must be a string"],
    ["x".repeat(101), "must be at most 100 characters"],
    ["tab\there", "must not contain control characters"],
  ])("a bad name (%j) is 400 validation_failed", async (name, message) => {
    const res = await createKey(alice, name);
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({ success: false, error: "The request is not valid", code: "validation_failed", details: [{ field: "name", message }] });
  });

  test("an empty body is 400", async () => {
    const res = await h.call("POST", "/v1/keys", { headers: await as(alice) });
    expect(res.status).toBe(400);
  });
});

describe("GET /v1/keys", () => {
  test("lists the user's own active keys without the key itself", async () => {
    const made = (await bodyOf(await createKey(bob, "bob's only new key"))).data;
    const keys = await listKeys(bob);
    expect(keys).toHaveLength(2); // the test key of addUser and this one
    const listed = keys.find((k: { id: string }) => k.id === made.id);
    expect(listed).toEqual({ id: made.id, name: "bob's only new key", prefix: made.prefix, createdAt: made.createdAt, lastUsedAt: null });
    expect(JSON.stringify(keys)).not.toContain(made.key);
    expect(JSON.stringify(keys)).not.toContain(bob.key);
    expect((await listKeys(alice)).map((k: { id: string }) => k.id)).not.toContain(made.id);
  });

  test("lastUsedAt is kept to the minute without a write per request", async () => {
    const carol = await addUser(h, { email: "carol@example.com" });
    const t0 = h.clock.now();
    expect((await whoami(carol.key)).status).toBe(200);
    const first = (await listKeys(carol))[0];
    expect(first.lastUsedAt).toBe(new Date(t0).toISOString());

    h.clock.advance(30_000);
    expect((await whoami(carol.key)).status).toBe(200);
    expect((await listKeys(carol))[0].lastUsedAt).toBe(new Date(t0).toISOString());

    h.clock.advance(30_000);
    expect((await whoami(carol.key)).status).toBe(200);
    expect((await listKeys(carol))[0].lastUsedAt).toBe(new Date(t0 + 60_000).toISOString());
  });
});

describe("DELETE /v1/keys/{id}", () => {
  test("revokes the key: it is refused at once and no longer listed", async () => {
    const made = (await bodyOf(await createKey(alice, "to revoke"))).data;
    expect((await whoami(made.key)).status).toBe(200);
    const res = await h.call("DELETE", `/v1/keys/${made.id}`, { headers: await as(alice) });
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({
      success: true,
      data: { id: made.id, name: "to revoke", prefix: made.prefix, createdAt: made.createdAt, lastUsedAt: expect.any(String), revokedAt: new Date(h.clock.now()).toISOString() },
    });
    const refused = await whoami(made.key);
    expect(refused.status).toBe(401);
    expect((await bodyOf(refused)).code).toBe("unauthorized");
    expect((await listKeys(alice)).map((k: { id: string }) => k.id)).not.toContain(made.id);
  });

  test("another user's key, an unknown id, a revoked key and a malformed id are 404", async () => {
    const bobs = (await bodyOf(await createKey(bob, "bob's"))).data;
    for (const id of [bobs.id, "999999", "abc", "0", "-1"]) {
      const res = await h.call("DELETE", `/v1/keys/${id}`, { headers: await as(alice) });
      expect(res.status).toBe(404);
      expect((await bodyOf(res)).code).toBe("not_found");
    }
    expect((await whoami(bobs.key)).status).toBe(200);
    expect((await h.call("DELETE", `/v1/keys/${bobs.id}`, { headers: await as(bob) })).status).toBe(200);
    expect((await h.call("DELETE", `/v1/keys/${bobs.id}`, { headers: await as(bob) })).status).toBe(404);
  });

  test("the key routes need a user JWT", async () => {
    for (const [method, path] of [["GET", "/v1/keys"], ["POST", "/v1/keys"], ["DELETE", `/v1/keys/${alice.keyId}`]]) {
      const res = await h.call(method, path, { headers: alice.apiKey, json: method === "POST" ? { name: "x" } : undefined });
      expect(res.status).toBe(401);
      expect((await bodyOf(res)).error).toContain("POST /v1/auth/login");
    }
    expect((await whoami(alice.key)).status).toBe(200);
  });
});
