// A bouncer's list computed whole in steps (issue 29): the first pull after a start, and the first after an
// allowlist change (a change wider than addresses), compute the filter's list a step at a time with turns of the
// event loop between (Bouncers.listReady), pulls asked meanwhile share that one computation, and the answers are
// the deltas they always were. Pulls over a real port.

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { ipv4FromNumber } from "../../src/domain/ip";
import type { Principal } from "../../src/domain/principal";
import { currentDecisions } from "../../src/services/bouncers/decision-list";
import { SELECTION_STEP_ENTRIES } from "../../src/services/blocklists/blocklist";
import { listen } from "../../src/http/server";
import { addUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { turnsTaken } from "../support/event-loop-watch";

const LISTED = 4 * SELECTION_STEP_ENTRIES;
let h: Harness;
let server: Server<undefined>;
let key: string;
let principal: Principal;

beforeAll(async () => {
  h = await createHarness();
  server = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0 });
  const now = h.clock.now();
  for (let i = 0; i < LISTED; i++) {
    h.services.index.upsert(ipv4FromNumber((0x0d000000 + i * 7) >>> 0), { reputationScore: 5, totalReports: 3, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now });
  }
  key = (await addUser(h)).key;
  principal = h.services.credentials.byDecisionsKey(key)!;
}, 60_000);
afterAll(async () => {
  server.stop(true);
  await h.close();
});

interface Stream {
  new: { value: string }[];
  deleted: { value: string }[];
}
const pull = async (query = ""): Promise<Stream> => {
  const res = await fetch(`http://127.0.0.1:${server.port}/v1/decisions/stream?${query}`, { headers: { "X-Api-Key": key } });
  expect(res.status).toBe(200);
  return (await res.json()) as Stream;
};
const values = (decisions: { value: string }[]) => decisions.map((d) => d.value).sort();

test("the first pull computes the list in steps; then nothing is computed until a change", async () => {
  const { bouncers } = h.services;
  const computed = bouncers.work.listsComputed;
  const ready = bouncers.listReady(principal);
  expect(ready).not.toBeNull();
  const { turns } = await turnsTaken(() => ready!);
  expect(turns).toBeGreaterThanOrEqual(LISTED / SELECTION_STEP_ENTRIES);
  expect(bouncers.work.listsComputed).toBe(computed + 1);
  expect(bouncers.listReady(principal)).toBeNull();
  const startup = await pull("startup=true");
  expect(startup.new.length).toBe(LISTED);
  expect(await pull()).toEqual({ new: [], deleted: [] });
  expect(bouncers.work.listsComputed).toBe(computed + 1);
});

test("after an allowlist change the list is computed in steps once for the pulls that wait on it; their deltas say what left and came back", async () => {
  const { bouncers } = h.services;
  const address = ipv4FromNumber(0x0d000000 + 7 * 100).text;
  h.services.allowlist.add(`${address}/32`, "in steps", null);
  const computed = bouncers.work.listsComputed;
  const ready = bouncers.listReady(principal);
  expect(ready).not.toBeNull();
  expect(bouncers.listReady(principal)).toBe(ready);
  const { turns } = await turnsTaken(() => ready!);
  expect(turns).toBeGreaterThanOrEqual(LISTED / SELECTION_STEP_ENTRIES);
  const [a, b] = await Promise.all([pull(), pull("scopes=ip")]);
  expect(values(a.deleted)).toEqual([address]);
  expect(a.new).toEqual([]);
  expect(values(b.deleted)).toEqual([address]);
  expect(bouncers.work.listsComputed).toBe(computed + 1);

  h.services.allowlist.remove(`${address}/32`);
  // Not waited for here: the pull's route waits for the computation itself.
  const back = await pull();
  expect(values(back.new)).toEqual([address]);
  expect(back.deleted).toEqual([]);
  expect(bouncers.work.listsComputed).toBe(computed + 2);
  const listed = currentDecisions(h.services.index, h.services.allowlist.set, { minimumRisk: "HIGH", categories: null, expandNetworks: false });
  expect(listed.ids.length).toBe(LISTED);
});

test("an address that changes is followed alone: no list computed, no wait", async () => {
  const { bouncers } = h.services;
  const computed = bouncers.work.listsComputed;
  const now = h.clock.now();
  const entering = ipv4FromNumber(0x0e000001);
  h.services.index.upsert(entering, { reputationScore: 5, totalReports: 3, verifiedReports: 0, categoriesMask: 1, lastCategoryBit: 0, firstSeenMs: now, lastSeenMs: now });
  expect(bouncers.listReady(principal)).toBeNull();
  expect(values((await pull()).new)).toEqual([entering.text]);
  expect(bouncers.work.listsComputed).toBe(computed);
});
