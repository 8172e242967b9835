// A CrowdSec bouncer pulling the decisions stream from an edge (`serve --follow`, the real CLI): its cursor outlives
// the services of each snapshot, which a swap replaces, and the edge process itself. Bouncers send `startup` on
// their first pull only and remove only what comes in `deleted` (contract 14): had the cursor gone with a swap or a
// restart, the next pull would get the startup answer and an address that left the list (allowlisted on the
// primary here) would stay blocked on the firewall for the whole duration (596 h by default).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { exportSnapshot } from "../../../src/services/snapshots/export";
import { addUser } from "../../support/accounts";
import { EDGE_KEY, type EdgeProcess, startEdge, within } from "../../support/edge-process";
import { type ScriptedPrimary, scriptedPrimary, serveFile, signedSnapshots } from "../../support/scripted-primary";

const GOES = "198.51.100.10";
const STAYS = "198.51.100.11";
let dir: string;
let before: string;
let after: string;
let keyPrefix: string;
let primary: ScriptedPrimary | null = null;
let edge: EdgeProcess | null = null;

beforeAll(async () => {
  ({ dir, keyPrefix } = await signedSnapshots("abuse-intel-edge-cursors-", async (h, dir, signKey) => {
    // Three reporters at severity 5: CRITICAL, on every bouncer's default list (HIGH or worse).
    for (let i = 0; i < 3; i++) {
      const u = await addUser(h, { tier: "enterprise" });
      for (const ip of [GOES, STAYS]) expect((await h.call("POST", "/v1/ip/report", { headers: u.jwt, json: { ip, category: "ssh", severity: 5 } })).status).toBe(201);
    }
    before = join(dir, "before.sqlite");
    after = join(dir, "after.sqlite");
    await exportSnapshot({ store: h.store, services: h.services, out: before, signKey, nowMs: h.clock.now() });
    const admin = await addUser(h, { role: "admin", tier: "enterprise" });
    expect((await h.call("POST", "/v1/admin/allowlist", { headers: admin.jwt, json: { cidr: `${GOES}/32`, note: "our scanner" } })).status).toBe(201);
    h.clock.advance(60_000);
    await exportSnapshot({ store: h.store, services: h.services, out: after, signKey, nowMs: h.clock.now() });
  }));
}, 60_000);
afterAll(async () => {
  await edge?.stop();
  primary?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function pull(startup: boolean): Promise<{ new: string[]; deleted: string[] }> {
  const res = await fetch(`${edge!.url}/v1/decisions/stream?startup=${startup}`, { headers: { "x-api-key": EDGE_KEY } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { new: { value: string }[]; deleted: { value: string }[] };
  return { new: body.new.map((d) => d.value).sort(), deleted: body.deleted.map((d) => d.value) };
}

test("an address that left the list between two snapshots comes in `deleted` of the first pull after the swap, and after a restart nothing is sent again", async () => {
  primary = scriptedPrimary(serveFile(before));
  const dataDir = join(dir, "edge");
  edge = await startEdge(dataDir, primary.url, `${keyPrefix}.pub`);
  expect(await within(60_000, async () => ((await edge!.readyz()).status === 200 ? true : null))).toBe(true);
  expect(await pull(true)).toEqual({ new: [GOES, STAYS], deleted: [] });
  expect(await pull(false)).toEqual({ new: [], deleted: [] });

  const createdBefore = (await edge.readyz()).edge.snapshotCreatedAt;
  primary.answer = serveFile(after);
  expect(await within(60_000, async () => ((await edge!.readyz()).edge.snapshotCreatedAt !== createdBefore ? true : null))).toBe(true);
  expect(await pull(false)).toEqual({ new: [], deleted: [GOES] });

  // An edge restarted (an upgrade, a reboot) knows what each bouncer holds.
  await edge.stop();
  edge = await startEdge(dataDir, primary.url, `${keyPrefix}.pub`);
  expect(await within(60_000, async () => ((await edge!.readyz()).status === 200 ? true : null))).toBe(true);
  expect(await pull(false)).toEqual({ new: [], deleted: [] });
}, 240_000);
