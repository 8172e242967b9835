import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe("the contract's error body (section 1)", () => {
  test("an unknown route is 404 with the error body", async () => {
    const res = await h.call("GET", "/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await bodyOf(res)).toEqual({ success: false, error: "No such endpoint", code: "not_found" });
  });

  test("another method on a route served ahead of the app (the reputation lookup) is an unknown route, and not counted", async () => {
    const { addUser } = await import("../support/accounts");
    const user = await addUser(h, { tier: "free" });
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const res = await h.call(method, "/v1/ip/1.2.3.4/reputation", { headers: { ...user.apiKey, "content-type": "application/json" }, body: "{bad" });
      expect(res.status).toBe(404);
      expect(await bodyOf(res)).toEqual({ success: false, error: "No such endpoint", code: "not_found" });
      expect(res.headers.get("x-ratelimit-remaining")).toBeNull();
    }
    const get = await h.call("GET", "/v1/ip/1.2.3.4/reputation", { headers: user.apiKey });
    expect(get.status).toBe(200);
    // The first counted request of the day: the four refused above took nothing from the budget.
    expect(Number(get.headers.get("x-ratelimit-remaining"))).toBe(Number(get.headers.get("x-ratelimit-limit")) - 1);
    expect((await h.call("HEAD", "/v1/ip/1.2.3.4/reputation", { headers: user.apiKey })).status).toBe(200);
  });

  test("healthz and readyz answer", async () => {
    expect(await (await h.call("GET", "/healthz")).json()).toEqual({ success: true, status: "ok" });
    const ready = await h.call("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect((await bodyOf(ready)).checks).toEqual({ database: true, index: true });
  });
});

describe("JSON bodies", () => {
  // A throwaway route on the real app: the parser and error mapping are what is under test.
  const echo = () => {
    const app = new Elysia().use(h.app).post("/test/echo", ({ body }) => ({ success: true, body }));
    return (init: RequestInit) => app.handle(new Request("http://localhost/test/echo", { method: "POST", ...init }));
  };

  test("valid JSON reaches the route", async () => {
    const res = await echo()({ body: '{"a":1}', headers: { "content-type": "application/json; charset=utf-8" } });
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({ success: true, body: { a: 1 } });
  });

  test("malformed JSON is 400 bad_request", async () => {
    const res = await echo()({ body: '{"a":', headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({ success: false, error: "The request body is not valid JSON", code: "bad_request" });
  });

  test("a body that is not application/json is 415", async () => {
    const res = await echo()({ body: "a=1", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(res.status).toBe(415);
    expect((await bodyOf(res)).code).toBe("unsupported_media_type");
  });

  test("a body over 64 KiB is 413, with or without a Content-Length", async () => {
    const big = JSON.stringify({ a: "x".repeat(64 * 1024) });
    const declared = await echo()({ body: big, headers: { "content-type": "application/json" } });
    expect(declared.status).toBe(413);
    expect((await bodyOf(declared)).code).toBe("payload_too_large");
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    const chunked = await echo()({ body: stream, headers: { "content-type": "application/json" } });
    expect(chunked.status).toBe(413);
  });

  test("exactly 64 KiB is accepted", async () => {
    const body = JSON.stringify({ a: "" });
    const padded = body.slice(0, -1) + " ".repeat(64 * 1024 - body.length) + "}";
    expect(padded.length).toBe(64 * 1024);
    const res = await echo()({ body: padded, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(200);
  });
});

describe("a database locked by another process", () => {
  test("SQLITE_BUSY from any route is 503 busy with Retry-After, not a 500", async () => {
    const { Database } = await import("bun:sqlite");
    const { databasePath } = await import("../../src/store/database");
    const other = new Database(databasePath(h.dataDir));
    const locked = h.services.store.sqlite;
    locked.exec("PRAGMA busy_timeout = 10");
    other.exec("BEGIN IMMEDIATE");
    try {
      const app = new Elysia().use(h.app).post("/test/write", () => {
        locked.exec("INSERT INTO meta (key, value) VALUES ('busy-test', 'x')");
        return { success: true };
      });
      const res = await app.handle(new Request("http://localhost/test/write", { method: "POST" }));
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect((await bodyOf(res)).code).toBe("busy");
    } finally {
      other.exec("ROLLBACK");
      other.close();
      locked.exec("PRAGMA busy_timeout = 5000");
    }
  });
});
