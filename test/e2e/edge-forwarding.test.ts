// Reports through edges (contract 18), two executables on 127.0.0.1: what an edge acknowledges reaches the primary
// exactly once, counted in the primary's database file, across (a) the primary stopped (SIGTERM, then SIGKILL) for
// a while, (b) the edge SIGKILLed right after acknowledging a burst and started again, (c) kill/restart cycles of
// both under a steady stream of reports; a report the primary refuses is recorded on the edge and never sent
// again; the queue's bound answers 503 with Retry-After and loses nothing queued; Debian's fail2ban pointed at the
// edge with the primary stopped gets its ban to the primary once it is back.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Fail2ban, fail2banInstalled, JAIL } from "../support/fail2ban";
import { join } from "node:path";
import { runCli } from "./support/binary";
import { EDGE_KEY, ForwardingPair, OTHER_EDGE_KEY, exactlyOnce, waitFor } from "./support/forwarding";

let pair: ForwardingPair;
let next = 0;
/** An address no other report of this file uses. */
const freshIp = () => `198.18.${Math.floor(++next / 250)}.${(next % 250) + 1}`;

beforeAll(async () => {
  pair = await ForwardingPair.create();
  await pair.startEdge();
}, 120_000);
afterAll(async () => {
  await pair?.close();
});

/** Sends `n` reports to the edge at once; the addresses it acknowledged with 202. */
async function burst(n: number): Promise<string[]> {
  const ips = Array.from({ length: n }, freshIp);
  const statuses = await Promise.all(ips.map((ip) => pair.report(ip)));
  return ips.filter((_, i) => statuses[i] === 202);
}

describe("reports through an edge", () => {
  test("the edge takes a report before its first snapshot and forwards it; /readyz shows the queue empty again", async () => {
    const [ip] = await burst(1);
    expect(ip).toBeDefined();
    await waitFor("the report on the primary", () => exactlyOnce(pair.storedCounts(), [ip!]));
    const ready = await pair.edgeReadiness();
    expect(ready).toMatchObject({ forwardQueue: 0, lastForwardError: null });
  }, 120_000);

  test("(a) with the primary stopped (SIGTERM, then SIGKILL) the edge queues; once it is back every report arrives once", async () => {
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      await pair.stopPrimary(signal);
      const acknowledged = await burst(40);
      expect(acknowledged.length).toBe(40);
      const waiting = await waitFor("a failed forward attempt", async () => {
        const r = await pair.edgeReadiness();
        return r.lastForwardError !== null ? r : null;
      });
      expect(waiting.forwardQueue).toBe(40);
      // Down for a while: several attempts fail meanwhile.
      await Bun.sleep(3_000);
      await pair.startPrimary();
      await waitFor("every acknowledged report on the primary", () => exactlyOnce(pair.storedCounts(), acknowledged), 90_000);
      await waitFor("an empty queue", async () => ((await pair.edgeReadiness()).forwardQueue === 0 ? true : null));
      expect((await pair.edgeReadiness()).lastForwardError).toBeNull();
    }
  }, 240_000);

  test("(b) the edge SIGKILLed right after acknowledging a burst forwards all of it after it starts again", async () => {
    // While it forwards (the primary up), and with all of it still queued (the primary down).
    for (const primaryUp of [true, false]) {
      if (!primaryUp) await pair.stopPrimary("SIGKILL");
      const acknowledged = await burst(300);
      expect(acknowledged.length).toBe(300);
      await pair.stopEdge("SIGKILL");
      await pair.startEdge();
      if (!primaryUp) {
        expect((await pair.edgeReadiness()).forwardQueue).toBe(300);
        await pair.startPrimary();
      }
      await waitFor("every acknowledged report on the primary", () => exactlyOnce(pair.storedCounts(), acknowledged), 90_000);
      expect(exactlyOnce(pair.storedCounts(), acknowledged)).toBe(true);
    }
  }, 240_000);

  test("(c) many kill/restart cycles of both under a steady stream: what was acknowledged arrives once", async () => {
    const acknowledged: string[] = [];
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        const ips = Array.from({ length: 4 }, freshIp);
        const statuses = await Promise.all(ips.map((ip) => pair.report(ip)));
        ips.forEach((ip, i) => statuses[i] === 202 && acknowledged.push(ip));
        await Bun.sleep(20);
      }
    })();
    for (let cycle = 0; cycle < 4; cycle++) {
      await Bun.sleep(700);
      await pair.stopPrimary(cycle % 2 === 0 ? "SIGKILL" : "SIGTERM");
      await Bun.sleep(700);
      await pair.stopEdge("SIGKILL");
      await pair.startEdge();
      await Bun.sleep(500);
      await pair.startPrimary();
    }
    await Bun.sleep(1_000);
    streaming = false;
    await stream;
    expect(acknowledged.length).toBeGreaterThan(50);
    await waitFor("every acknowledged report on the primary", () => exactlyOnce(pair.storedCounts(), acknowledged), 120_000);
    expect(exactlyOnce(pair.storedCounts(), acknowledged)).toBe(true);
  }, 300_000);

  test("a report the primary refuses is recorded on the edge with its reason and never sent again", async () => {
    // Two clients of the edge report one address: the edge's rule is per client key, so it takes both; the primary
    // counts both for the one forward account, and refuses the second as a duplicate.
    const ip = freshIp();
    expect(await pair.report(ip, EDGE_KEY)).toBe(202);
    expect(await pair.report(ip, OTHER_EDGE_KEY)).toBe(202);
    // The same client again: the edge's own 429, as the primary would answer.
    expect(await pair.report(ip, EDGE_KEY)).toBe(429);
    const refused = await waitFor("the refusal on the edge", async () => {
      const r = await pair.edgeReadiness();
      return r.forwardRefused.find((x) => x.ip === ip) ?? null;
    });
    expect(refused.code).toBe("duplicate_report");
    // /metrics answers once the edge serves a snapshot: one made now on the primary.
    await pair.snapshotOnPrimary();
    const metrics = await waitFor("the edge's /metrics", async () => {
      const res = await fetch(`${pair.edgeUrl}/metrics`);
      return res.status === 200 ? res.text() : null;
    });
    expect(metrics).toMatch(/^abuse_intel_forward_refused_total [1-9]/m);
    expect(metrics).toMatch(/^abuse_intel_forwarded_total [1-9]/m);
    expect(metrics).toMatch(/^abuse_intel_forward_queue 0$/m);
    // Never retried: the queue is empty and the primary holds the address once, however long we wait.
    expect((await pair.edgeReadiness()).forwardQueue).toBe(0);
    await Bun.sleep(3_000);
    expect(pair.storedCounts().get(ip)).toBe(1);
    expect((await pair.edgeReadiness()).forwardQueue).toBe(0);
  }, 120_000);
});

describe("an edge serving a snapshot while it forwards", () => {
  test("its own queued reports do not change its answers until a snapshot brings them; /api/v2/report answers the snapshot's score", async () => {
    await pair.snapshotOnPrimary();
    const lookup = async (ip: string) => {
      const res = await fetch(`${pair.edgeUrl}/v1/ip/${ip}/reputation`, { headers: { "x-api-key": EDGE_KEY } });
      return res.status === 200 ? ((await res.json()) as { data: { totalReports: number } }).data.totalReports : null;
    };
    const ip = freshIp();
    await waitFor("the edge serving a snapshot", () => lookup(ip));
    const v2 = await fetch(`${pair.edgeUrl}/api/v2/report`, { method: "POST", headers: { Key: EDGE_KEY }, body: new URLSearchParams({ ip, categories: "18,22" }) });
    expect(v2.status).toBe(200);
    expect(((await v2.json()) as { data: unknown }).data).toEqual({ ipAddress: ip, abuseConfidenceScore: 0 });
    await waitFor("the reports on the primary", () => (pair.storedCounts().get(ip) === 2 ? true : null));
    expect(await lookup(ip)).toBe(0);
    await pair.snapshotOnPrimary();
    expect(await waitFor("the next snapshot on the edge", async () => ((await lookup(ip)) === 2 ? true : null))).toBe(true);
  }, 600_000);

  test("a second process on the edge's data directory is refused", async () => {
    const second = await runCli(pair.edgeSandbox, ["serve", "--host", "127.0.0.1", "--port", "0", "--follow", pair.primaryUrl, "--follow-key", pair.adminKey, "--forward-key", pair.adminKey, "--pubkey", join(pair.primarySandbox.dir, "primary.pub"), "--api-key", EDGE_KEY]);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain("already running");
  }, 60_000);
});

describe("the queue's bound", () => {
  let bounded: ForwardingPair;
  beforeAll(async () => {
    bounded = await ForwardingPair.create(["--forward-queue-max", "5"]);
    await bounded.stopPrimary("SIGTERM");
    await bounded.startEdge();
  }, 120_000);
  afterAll(async () => {
    await bounded?.close();
  });

  test("past --forward-queue-max a report is 503 busy with Retry-After; a bulk that does not fit queues nothing; nothing queued is lost", async () => {
    const ips = Array.from({ length: 5 }, freshIp);
    for (const ip of ips) expect(await bounded.report(ip)).toBe(202);
    const full = await fetch(`${bounded.edgeUrl}/v1/ip/report`, {
      method: "POST",
      headers: { "x-api-key": EDGE_KEY, "content-type": "application/json" },
      body: JSON.stringify({ ip: freshIp(), category: "ssh" }),
    });
    expect(full.status).toBe(503);
    expect(full.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(((await full.json()) as { code: string }).code).toBe("busy");
    const v2 = await fetch(`${bounded.edgeUrl}/api/v2/report`, { method: "POST", headers: { Key: EDGE_KEY }, body: new URLSearchParams({ ip: freshIp(), categories: "18" }) });
    expect(v2.status).toBe(503);
    expect(v2.headers.get("retry-after")).not.toBeNull();
    expect(((await v2.json()) as { errors: { status: number }[] }).errors[0]!.status).toBe(503);
    const bulk = await fetch(`${bounded.edgeUrl}/api/v2/bulk-report`, {
      method: "POST",
      headers: { Key: EDGE_KEY },
      body: new URLSearchParams({ csv: `IP,Categories,ReportDate,Comment\n${freshIp()},18,,a\n${freshIp()},22,,b\n` }),
    });
    expect(bulk.status).toBe(503);
    expect((await bounded.edgeReadiness()).forwardQueue).toBe(5);
    await bounded.startPrimary();
    await waitFor("the five queued reports on the primary", () => exactlyOnce(bounded.storedCounts(), ips), 90_000);
    expect([...bounded.storedCounts().keys()].sort()).toEqual([...ips].sort());
  }, 180_000);
});

describe.skipIf(!fail2banInstalled())("Debian's fail2ban pointed at an edge", () => {
  test("with the primary stopped, its ban becomes a queued report that reaches the primary once it is back", async () => {
    await pair.stopPrimary("SIGTERM");
    const f2b = await Fail2ban.start({ reportUrl: `${pair.edgeUrl}/api/v2/report`, apiKey: EDGE_KEY, categories: "18,22" });
    const ip = freshIp();
    try {
      f2b.fail(ip, 3);
      await f2b.waitForLog(new RegExp(`Ban ${ip.replaceAll(".", "\\.")}`), 60_000);
      // AbuseIPDB's categories 18,22: two reports of one request, queued together.
      await waitFor("the ban queued on the edge", async () => ((await pair.edgeReadiness()).forwardQueue === 2 ? true : null), 60_000);
      expect(pair.storedCounts().get(ip)).toBeUndefined();
    } finally {
      await f2b.stop();
    }
    expect(JAIL).toBeTruthy();
    await pair.startPrimary();
    const stored = await waitFor("the ban's reports on the primary", () => (pair.storedCounts().get(ip) === 2 ? true : null), 90_000);
    expect(stored).toBe(true);
  }, 180_000);
});
