// The console's forms are read under 256 KiB whether or not the body declares its length: the sign-in form needs
// no session, and a chunked body (no Content-Length) was parsed whole by the platform, up to the listener's own
// limit (128 MiB).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

/** `email=...&password=` then `mebibytes` MiB of `x`, sent chunked. */
function chunkedForm(mebibytes: number): ReadableStream<Uint8Array> {
  const filler = new TextEncoder().encode("x".repeat(1024 * 1024));
  let sent = -1;
  return new ReadableStream({
    pull(controller) {
      if (sent === -1) controller.enqueue(new TextEncoder().encode("email=a%40example.com&password="));
      else if (sent < mebibytes) controller.enqueue(filler);
      else controller.close();
      sent++;
    },
  });
}

test("a chunked sign-in form over 256 KiB is 413, as a declared one is", async () => {
  const headers = { "content-type": "application/x-www-form-urlencoded", origin: h.url };
  const chunked = await fetch(`${h.url}/login`, { method: "POST", redirect: "manual", headers, body: chunkedForm(2), duplex: "half" } as RequestInit);
  expect(chunked.status).toBe(413);
  const declared = await fetch(`${h.url}/login`, { method: "POST", redirect: "manual", headers, body: `email=a%40example.com&password=${"x".repeat(300 * 1024)}` });
  expect(declared.status).toBe(413);
});
