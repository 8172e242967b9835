// An edge's forward queue, intake and forwarder (contract 18) over a real SQLite file, against a recording stand-in
// for the primary on 127.0.0.1: batches of at most 1,000 in acceptance order with a request's reports together;
// retries while the primary answers 5xx/401/403/429 or is unreachable; a refusal recorded and never sent again; the
// duplicate rule per client key and the queue's bound (nothing queued dropped), both surviving a reopen.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../../../src/domain/clock";
import { AppError } from "../../../../src/domain/errors";
import type { ForwardedReportWire } from "../../../../src/domain/forwarded-report";
import { parseIp } from "../../../../src/domain/ip";
import type { ReportInput } from "../../../../src/domain/report-input";
import { EdgeIntake, type EdgeSubmission } from "../../../../src/services/edge/forward-intake";
import { Forwarder } from "../../../../src/services/edge/forwarder";
import { ForwardQueueFile } from "../../../../src/store/forward-queue";

let dir: string;
let queue: ForwardQueueFile;
let clock: ManualClock;
let primary: ReturnType<typeof Bun.serve> | null = null;
/** What the stand-in primary received, batch by batch. */
let batches: ForwardedReportWire[][];
/** The stand-in's answer to each batch: a status, and which ids it refuses. */
let answer: (batch: ForwardedReportWire[]) => { status: number; refuse?: Set<string> };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-forwarding-"));
  queue = new ForwardQueueFile(join(dir, "forward-queue.sqlite"));
  clock = new ManualClock();
  batches = [];
  answer = () => ({ status: 200 });
  primary = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const { reports } = (await request.json()) as { reports: ForwardedReportWire[] };
      batches.push(reports);
      const { status, refuse } = answer(reports);
      if (status !== 200) return new Response("no", { status });
      const results = reports.map((r) => (refuse?.has(r.id) ? { id: r.id, status: "refused", code: "duplicate_report", message: "again" } : { id: r.id, status: "accepted", reportId: "1" }));
      return Response.json({ success: true, data: { results } });
    },
  });
});
afterEach(() => {
  primary?.stop(true);
  queue.close();
  rmSync(dir, { recursive: true, force: true });
});

const input = (ip: string, category = "ssh"): ReportInput => ({ ip: parseIp(ip), category: category as ReportInput["category"], severity: 3, description: "", evidence: null, shape: "B" });
const one = (ip: string): EdgeSubmission => ({ inputs: [input(ip)], atMs: null, source: "api" });
const intakeOf = (queueMax = 1_000_000, duplicateWindowMs = 15 * 60_000) => new EdgeIntake({ queue, clock, duplicateWindowMs, queueMax });
const forwarderOf = (intake: EdgeIntake) =>
  new Forwarder({ queue, url: `http://127.0.0.1:${primary!.port}`, key: "k", clock, onSettled: (n) => intake.forwarded(n) });
const ipOf = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

describe("the forwarder", () => {
  test("sends batches of at most 1,000 in acceptance order, a request's reports together, until the queue is empty", async () => {
    const intake = intakeOf();
    const submissions: EdgeSubmission[] = [];
    for (let n = 1; n <= 2_500; n++) {
      // Every 7th request is an AbuseIPDB report with two categories: two reports that travel together.
      submissions.push(n % 7 === 0 ? { inputs: [input(ipOf(n)), input(ipOf(n), "brute_force")], atMs: null, source: "abuseipdb" } : one(ipOf(n)));
    }
    const ids = (await intake.accept("client", submissions)).flat();
    expect(intake.queuedCount).toBe(ids.length);
    const forwarder = forwarderOf(intake);
    forwarder.start();
    await forwarder.drain();
    await forwarder.stop();
    expect(batches.length).toBeGreaterThanOrEqual(3);
    for (const b of batches) expect(b.length).toBeLessThanOrEqual(1_000);
    expect(batches.flat().map((r) => r.id)).toEqual(ids);
    for (let i = 0; i < batches.length - 1; i++) expect(batches[i]!.at(-1)!.group).not.toBe(batches[i + 1]![0]!.group);
    expect(queue.count()).toBe(0);
    expect(intake.queuedCount).toBe(0);
    expect(forwarder.status.forwardedTotal).toBe(ids.length);
  });

  for (const status of [500, 503, 401, 403, 429, 404]) {
    test(`an answer ${status} for the batch keeps it queued and says why; it goes again, the same ids, once the primary takes it`, async () => {
      const intake = intakeOf();
      const ids = (await intake.accept("client", [one("192.0.2.10"), one("192.0.2.11")])).flat();
      answer = () => ({ status });
      const forwarder = forwarderOf(intake);
      forwarder.start();
      await forwarder.drain();
      expect(queue.count()).toBe(2);
      expect(forwarder.status.lastForwardError).toContain(String(status));
      answer = () => ({ status: 200 });
      // The retry comes after the backoff (1 s after the first failure): wait for it without driving it.
      const deadline = Date.now() + 30_000;
      while (queue.count() > 0 && Date.now() < deadline) await Bun.sleep(50);
      await forwarder.stop();
      expect(queue.count()).toBe(0);
      expect(forwarder.status.lastForwardError).toBeNull();
      expect(batches.length).toBeGreaterThanOrEqual(2);
      for (const b of batches) expect(b.map((r) => r.id)).toEqual(ids);
    }, 40_000);
  }

  test("an unreachable primary: the batch stays queued, with the reason", async () => {
    const intake = intakeOf();
    await intake.accept("client", [one("192.0.2.12")]);
    const port = primary!.port;
    primary!.stop(true);
    primary = null;
    const forwarder = new Forwarder({ queue, url: `http://127.0.0.1:${port}`, key: "k", clock });
    forwarder.start();
    await forwarder.drain();
    await forwarder.stop();
    expect(queue.count()).toBe(1);
    expect(forwarder.status.lastForwardError).toContain("could not be reached");
  });

  test("a refusal is recorded with its reason and never sent again; the rest of the batch is done", async () => {
    const intake = intakeOf();
    const [[refusedId], [acceptedId]] = await intake.accept("client", [one("192.0.2.20"), one("192.0.2.21")]);
    answer = () => ({ status: 200, refuse: new Set([refusedId!]) });
    const forwarder = forwarderOf(intake);
    forwarder.start();
    await forwarder.drain();
    await intake.accept("client", [one("192.0.2.22")]);
    await forwarder.drain();
    await forwarder.stop();
    expect(queue.count()).toBe(0);
    expect(queue.lastRefused(5)).toEqual([{ id: refusedId!, ip: "192.0.2.20", code: "duplicate_report", message: "again", refusedAt: clock.now() }]);
    expect(forwarder.status).toMatchObject({ refusedTotal: 1, forwardedTotal: 2 });
    const sent = batches.flat().map((r) => r.id);
    expect(sent.filter((id) => id === refusedId)).toHaveLength(1);
    expect(sent.filter((id) => id === acceptedId)).toHaveLength(1);
  });
});

describe("the edge's intake", () => {
  test("the duplicate rule is per client key over what it accepted in the window, forwarded or not, and survives a reopen", async () => {
    const intake = intakeOf();
    await intake.accept("alice", [one("192.0.2.30")]);
    const refused = await intake.accept("alice", [one("192.0.2.30")]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).errorCode).toBe("duplicate_report");
    expect((refused as AppError).headers?.["retry-after"]).toBe("900");
    await intake.accept("bob", [one("192.0.2.30")]);
    // Forwarded meanwhile, and the edge restarted: still a duplicate for alice until the window has passed.
    const forwarder = forwarderOf(intake);
    forwarder.start();
    await forwarder.drain();
    await forwarder.stop();
    clock.advance(10 * 60_000);
    const reopened = intakeOf();
    const again = await reopened.accept("alice", [one("192.0.2.30")]).catch((e: unknown) => e);
    expect((again as AppError).errorCode).toBe("duplicate_report");
    expect((again as AppError).headers?.["retry-after"]).toBe("300");
    clock.advance(5 * 60_000);
    await reopened.accept("alice", [one("192.0.2.30")]);
  });

  test("past the bound a request is 503 busy with Retry-After, a request that does not fit whole queues nothing, nothing queued is dropped", async () => {
    const intake = intakeOf(3);
    await intake.accept("c", [one("192.0.2.40"), one("192.0.2.41")]);
    const tooMany = await intake.accept("c", [one("192.0.2.42"), one("192.0.2.43")]).catch((e: unknown) => e);
    expect((tooMany as AppError).errorCode).toBe("busy");
    expect((tooMany as AppError).headers?.["retry-after"]).toMatch(/^\d+$/);
    expect(queue.count()).toBe(2);
    // The duplicate rule did not note the refused ones.
    await intake.accept("c", [one("192.0.2.42")]);
    expect((await intake.accept("c", [one("192.0.2.44")]).catch((e: unknown) => e) as AppError).errorCode).toBe("busy");
    expect(queue.count()).toBe(3);
    expect(queue.oldest(10).map((r) => JSON.parse(r.report).ip)).toEqual(["192.0.2.40", "192.0.2.41", "192.0.2.42"]);
  });

  test("a report keeps its own time when it has one, else the time it was accepted", async () => {
    const intake = intakeOf();
    const own = clock.now() - 86_400_000;
    await intake.accept("c", [{ inputs: [input("192.0.2.50")], atMs: own, source: "abuseipdb" }, one("192.0.2.51")]);
    expect(queue.oldest(10).map((r) => [r.at, r.own_time])).toEqual([[own, 1], [clock.now(), 0]]);
  });
});
