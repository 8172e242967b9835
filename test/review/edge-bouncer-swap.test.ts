// Review (edges): a CrowdSec bouncer pulling the decisions stream from an edge. An edge keeps each bouncer's
// cursor in memory in the services of the snapshot it serves, and a swap builds new services: the first pull after
// a swap finds no cursor and gets the startup answer (everything in `new`, nothing in `deleted`). Bouncers never
// send startup again and only remove what comes in `deleted` (contract 14), so an address that left the list
// between two snapshots (allowlisted on the primary here) stays blocked on the firewall for the whole duration
// (596 h by default).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportSnapshot } from "../../src/services/snapshots/export";
import { writeKeyPair } from "../../src/services/snapshots/signing";
import { addUser } from "../support/accounts";
import { createHarness } from "../support/harness";
import { EDGE_KEY, type EdgeProcess, fakePrimary, type FakePrimary, serveFile, startEdge, within } from "./edge-support";

const GOES = "198.51.100.10";
const STAYS = "198.51.100.11";
let dir: string;
let before: string;
let after: string;
let keyPrefix: string;
let primary: FakePrimary | null = null;
let edge: EdgeProcess | null = null;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "review edge bouncer "));
  keyPrefix = join(dir, "primary");
  writeKeyPair(keyPrefix);
  const h = await createHarness();
  try {
    // Three reporters at severity 5: CRITICAL, on every bouncer's default list (HIGH or worse).
    for (let i = 0; i < 3; i++) {
      const u = await addUser(h, { tier: "enterprise" });
      for (const ip of [GOES, STAYS]) expect((await h.call("POST", "/v1/ip/report", { headers: u.jwt, json: { ip, category: "ssh", severity: 5 } })).status).toBe(201);
    }
    before = join(dir, "before.sqlite");
    after = join(dir, "after.sqlite");
    await exportSnapshot({ store: h.store, services: h.services, out: before, signKey: `${keyPrefix}.key`, nowMs: h.clock.now() });
    const admin = await addUser(h, { role: "admin", tier: "enterprise" });
    expect((await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: `${GOES}/32`, note: "our scanner" } })).status).toBe(201);
    h.clock.advance(60_000);
    await exportSnapshot({ store: h.store, services: h.services, out: after, signKey: `${keyPrefix}.key`, nowMs: h.clock.now() });
  } finally {
    await h.close();
  }
});
afterAll(async () => {
  await edge?.stop();
  primary?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function pull(startup: boolean): Promise<{ new: { value: string }[]; deleted: { value: string }[] }> {
  const res = await fetch(`${edge!.url}/v1/decisions/stream?startup=${startup}`, { headers: { "x-api-key": EDGE_KEY } });
  expect(res.status).toBe(200);
  return (await res.json()) as { new: { value: string }[]; deleted: { value: string }[] };
}

test("an address that left the list between two snapshots comes in `deleted` of the first pull after the swap", async () => {
  primary = fakePrimary(serveFile(before));
  mkdirSync(join(dir, "edge"));
  edge = await startEdge(join(dir, "edge"), primary.url, `${keyPrefix}.pub`);
  expect(await within(10_000, async () => ((await edge!.readyz()).status === 200 ? true : null))).toBe(true);
  const first = await pull(true);
  expect(first.new.map((d) => d.value).sort()).toEqual([GOES, STAYS]);
  expect((await pull(false))).toEqual({ new: [], deleted: [] });

  const createdBefore = (await edge.readyz()).body.edge?.snapshotCreatedAt;
  primary.answer = serveFile(after);
  expect(await within(10_000, async () => ((await edge!.readyz()).body.edge?.snapshotCreatedAt !== createdBefore ? true : null))).toBe(true);

  const next = await pull(false);
  expect({ new: next.new.map((d) => d.value), deleted: next.deleted.map((d) => d.value) }).toEqual({ new: [], deleted: [GOES] });
}, 30_000);
