// "A key keeps the cursors of its 64 most recently pulled client addresses; a pull from a 65th drops the least
// recently pulled" (docs/decisions.md), recency being the order of the pulls, not the wall clock: after the clock
// steps back (an NTP correction), the bouncer that pulled last must not be the one pushed out (its next pull would
// be the startup answer, with nothing in `deleted`).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { request } from "node:http";
import { addUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

interface Stream {
  new: { value: string }[];
  deleted: { value: string }[];
}

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
  h.services.feeds.importText("lab", "198.51.100.7\n198.51.100.8\n", { category: "HACKING", severity: 4, replace: true });
});
afterAll(() => h.close());

function pullFrom(key: string, from: string, query = ""): Promise<Stream> {
  h.clock.advance(1000);
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: Number(new URL(h.url).port), path: `/v1/decisions/stream?${query}`, localAddress: from, headers: { "x-api-key": key } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(body) as Stream) : reject(new Error(`${res.statusCode} ${body}`))));
    });
    req.on("error", reject);
    req.end();
  });
}

test("after the clock steps back, a 65th address pushes out the least recently pulled, not the one just pulled", async () => {
  const { key } = await addUser(h);
  for (let n = 1; n <= 64; n++) await pullFrom(key, `127.0.5.${n}`, "startup=true");
  // The clock is stepped back an hour; the bouncer at 127.0.5.64 pulls (the most recent pull of all now).
  h.clock.advance(-3600_000);
  expect(await pullFrom(key, "127.0.5.64")).toEqual({ new: [], deleted: [] });
  // A 65th address: the least recently pulled (127.0.5.1) should make room.
  await pullFrom(key, "127.0.6.1", "startup=true");
  h.services.feeds.importText("lab", "198.51.100.7\n", { category: "HACKING", severity: 4, replace: true });
  const next = await pullFrom(key, "127.0.5.64");
  expect(next.deleted.map((d) => d.value)).toEqual(["198.51.100.8"]);
});
