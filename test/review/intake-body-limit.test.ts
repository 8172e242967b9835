// Review (intake): /api/v2 bodies are limited to 16 MiB (src/http/abuseipdb/params.ts MAX_BODY_BYTES, "bodies above
// this are refused"), but only a declared Content-Length is checked before reading; a chunked form body is read
// whole, however large (up to the listener's 128 MiB), and then processed. A client (or several at once) can make
// the appliance hold 128 MiB per request, and a report stored from a body the documented limit refuses.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let reporter: TestUser;
beforeAll(async () => {
  h = await createHarness();
  reporter = await addUser(h, { tier: "enterprise" });
});
afterAll(() => h.close());

/** A body sent chunked (no Content-Length): `parts` yielded one after the other. */
function chunked(parts: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < parts.length) controller.enqueue(parts[i++]);
      else controller.close();
    },
  });
}

test("a chunked multipart /api/v2/report body of 24 MiB is refused with 413, and nothing is stored", async () => {
  const boundary = "----review-intake-boundary";
  const enc = new TextEncoder();
  const head = enc.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="ip"\r\n\r\n203.0.113.210\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="categories"\r\n\r\n18\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="comment"\r\n\r\n`,
  );
  const filler = enc.encode("x".repeat(1024 * 1024));
  const tail = enc.encode(`\r\n--${boundary}--\r\n`);
  const parts = [head, ...Array.from({ length: 24 }, () => filler), tail];
  const res = await fetch(`${h.url}/api/v2/report`, {
    method: "POST",
    headers: { Key: reporter.key, "content-type": `multipart/form-data; boundary=${boundary}` },
    body: chunked(parts),
    // @ts-expect-error Bun's fetch takes a stream body
    duplex: "half",
  });
  const answer = await res.text();
  const stored = (h.store.sqlite.query("SELECT count(*) AS n FROM reports WHERE ip = '203.0.113.210'").get() as { n: number }).n;
  // Observed: 200 {"data":{"ipAddress":"203.0.113.210",...}} and the report stored.
  expect({ status: res.status, stored }).toEqual({ status: 413, stored: 0 });
  expect(answer).toContain("too large");
}, 20_000);
