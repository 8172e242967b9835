// "A key keeps the cursors of its 64 most recently pulled client addresses; a pull from a 65th drops the least
// recently pulled" (docs/decisions.md), recency being the order of the pulls, not the wall clock: after the clock
// steps back (an NTP correction), the bouncer that pulled last must not be the one pushed out (its next pull would
// be the startup answer, with nothing in `deleted`).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser } from "../support/accounts";
import { type DecisionStream, pullDecisions } from "../support/decision-pull";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
  h.services.feeds.importText("lab", "198.51.100.7\n198.51.100.8\n", { category: "HACKING", severity: 4, replace: true });
});
afterAll(() => h.close());

function pullFrom(key: string, from: string, query = ""): Promise<DecisionStream> {
  h.clock.advance(1000);
  return pullDecisions(Number(new URL(h.url).port), key, from, query);
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
