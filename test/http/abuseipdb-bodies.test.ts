// `/api/v2` request bodies sent chunked (no Content-Length): the 16 MiB limit holds for them as for a declared
// length, in every body format the endpoints take, and no more than that is read. A body over it is 413 in
// AbuseIPDB's error shape and changes nothing; before, a chunked body was read whole (up to the listener's
// 128 MiB) and a form body's report stored.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { MAX_BODY_BYTES } from "../../src/http/abuseipdb/params";
import { addUser, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let reporter: TestUser;
beforeAll(async () => {
  h = await createHarness();
  reporter = await addUser(h, { tier: "enterprise" });
});
afterAll(() => h.close());

const enc = new TextEncoder();
const MiB = 1024 * 1024;

/**
 * `head`, then `fillerMiB` MiB of `x` (endless when Infinity), then `tail`, sent chunked (a stream body has no
 * Content-Length).
 */
function chunked(head: string, fillerMiB: number, tail: string): ReadableStream<Uint8Array> {
  const filler = enc.encode("x".repeat(MiB));
  let sent = -1;
  return new ReadableStream({
    pull(controller) {
      if (sent === -1) controller.enqueue(enc.encode(head));
      else if (sent < fillerMiB) controller.enqueue(filler);
      else if (sent === fillerMiB) controller.enqueue(enc.encode(tail));
      else controller.close();
      sent++;
    },
  });
}

const BOUNDARY = "----abuse-intel-test-boundary";
/** A report of `ip` whose comment is `fillerMiB` MiB long, in each body format /api/v2 takes. */
const bodies = {
  multipart: (ip: string, fillerMiB: number) => ({
    type: `multipart/form-data; boundary=${BOUNDARY}`,
    body: chunked(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="ip"\r\n\r\n${ip}\r\n` +
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="categories"\r\n\r\n18\r\n` +
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="comment"\r\n\r\n`,
      fillerMiB,
      `\r\n--${BOUNDARY}--\r\n`,
    ),
  }),
  urlencoded: (ip: string, fillerMiB: number) => ({ type: "application/x-www-form-urlencoded", body: chunked(`ip=${ip}&categories=18&comment=`, fillerMiB, "") }),
  json: (ip: string, fillerMiB: number) => ({ type: "application/json", body: chunked(`{"ip":"${ip}","categories":"18","comment":"`, fillerMiB, '"}') }),
};

const send = ({ type, body }: { type: string; body: ReadableStream<Uint8Array> }) =>
  fetch(`${h.url}/api/v2/report`, { method: "POST", headers: { Key: reporter.key, "content-type": type }, body, duplex: "half" });
const storedOf = (ip: string) => (h.store.sqlite.query("SELECT count(*) AS n FROM reports WHERE ip = ?").get(ip) as { n: number }).n;

let n = 0;
for (const [format, make] of Object.entries(bodies)) {
  test(`a chunked ${format} body is cut off at ${MAX_BODY_BYTES / MiB} MiB: 413 in AbuseIPDB's error shape, nothing stored; under it, read`, async () => {
    const endless = `203.0.113.${++n}`;
    const res = await send(make(endless, Number.POSITIVE_INFINITY));
    expect({ status: res.status, body: await res.json(), stored: storedOf(endless) }).toEqual({
      status: 413,
      body: { errors: [{ detail: `The request body is too large: at most ${MAX_BODY_BYTES / MiB} MiB.`, status: 413 }] },
      stored: 0,
    });
    const small = `203.0.113.${++n}`;
    const ok = await send(make(small, 1));
    expect({ status: ok.status, stored: storedOf(small) }).toEqual({ status: 200, stored: 1 });
  });
}
