// `serve --follow --dns-port` (the real CLI in its own process) against a scripted primary: the DNS blocklist
// answers from each snapshot the edge swaps in. The first snapshot has one report on the address (MEDIUM: not
// listed at the default HIGH), the next two (HIGH: listed); dig sees the change once the edge serves it.

import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { digAt, ipv4Name } from "../../support/dns";
import { type EdgeProcess, startEdge, within } from "../../support/edge-process";
import { reportAndExport, type ScriptedPrimary, scriptedPrimary, serveFile, signedSnapshots } from "../../support/scripted-primary";

// Each test runs dig or a process several times: room for a loaded machine (bun's default is 5 s).
setDefaultTimeout(60_000);

const IP = "198.51.100.77";
const ZONE = "dnsbl.edge.test";
let dir: string;
let older: string;
let newer: string;
let keyPrefix: string;
let primary: ScriptedPrimary | null = null;
let edge: EdgeProcess | null = null;

beforeAll(async () => {
  ({ dir, keyPrefix } = await signedSnapshots("abuse-intel-follow-dns-", async (h, dir, signKey) => {
    older = join(dir, "older.sqlite");
    newer = join(dir, "newer.sqlite");
    await reportAndExport(h, IP, older, signKey);
    h.clock.advance(60_000);
    await reportAndExport(h, IP, newer, signKey);
  }));
}, 60_000);
afterAll(async () => {
  await edge?.stop();
  primary?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("the edge's DNS answers follow the snapshot it serves", async () => {
  primary = scriptedPrimary(serveFile(older));
  edge = await startEdge(join(dir, "edge"), primary.url, `${keyPrefix}.pub`, ["--dns-port", "0", "--dns-host", "127.0.0.1", "--dns-zone", ZONE]);
  const port = Number(/DNS blocklist \S+ on udp\+tcp 127\.0\.0\.1:(\d+)/.exec(edge.output())?.[1]);
  expect(port).toBeGreaterThan(0);
  const status = async () => (await digAt(port, ipv4Name(IP, ZONE))).status;
  // SERVFAIL until the first snapshot; then NXDOMAIN (MEDIUM); then listed once the second is swapped in.
  expect(await within(20_000, async () => ((await status()) === "NXDOMAIN" ? true : null))).toBe(true);
  primary.answer = serveFile(newer);
  expect(await within(20_000, async () => ((await status()) === "NOERROR" ? true : null))).toBe(true);
  const a = await digAt(port, ipv4Name(IP, ZONE), "A", { tcp: true });
  expect(a.answer.map((r) => r.data).sort()).toEqual(["127.0.0.2", "127.0.1.22", "127.0.2.3"]);
}, 90_000);
