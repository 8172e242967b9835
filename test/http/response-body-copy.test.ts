// The answer cache hands lookups views of its arena as Response bodies, and reuses the arena after the request
// (answer-cache.ts). That is safe only because Bun copies a byte body when the Response is made. These tests
// hold Bun to it, in memory and through a real listener, so an upgrade that stops copying fails here first.

import { describe, expect, test } from "bun:test";

describe("Bun copies a Uint8Array body when a Response is made", () => {
  test("in memory: changing the bytes afterwards does not change the body", async () => {
    const bytes = new TextEncoder().encode('{"answer":"before"}');
    const view = bytes.subarray(0, bytes.length);
    const response = new Response(view);
    bytes.set(new TextEncoder().encode('{"answer":"after!"}'));
    expect(await response.text()).toBe('{"answer":"before"}');
  });

  test("over a listener: bytes overwritten right after the handler returns are not what is sent", async () => {
    // Larger than a socket buffer, so the send cannot finish inside the handler.
    const arena = new Uint8Array(4 << 20).fill(0x61);
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch() {
        const response = new Response(arena.subarray(0, 3 << 20));
        queueMicrotask(() => arena.fill(0x62));
        setTimeout(() => arena.fill(0x63), 0);
        return response;
      },
    });
    try {
      const body = new Uint8Array(await (await fetch(`http://127.0.0.1:${server.port}/`)).arrayBuffer());
      expect(body.length).toBe(3 << 20);
      expect(body.every((b) => b === 0x61)).toBe(true);
    } finally {
      server.stop(true);
    }
  });
});
