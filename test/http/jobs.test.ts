import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/http/app";
import { listen } from "../../src/http/server";
import { createScheduler, type Job } from "../../src/jobs/scheduler";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let admin: TestUser;
let user: TestUser;

beforeAll(async () => {
  // 08:00:00 on the manual clock; verify is rescheduled to show that config.schedules reaches the list.
  h = await createHarness({ schedules: { verify: "*/2 * * * *" } });
  admin = await addUser(h, { role: "admin", tier: "enterprise" });
  user = await addUser(h, { tier: "enterprise" });
});
afterAll(() => h.close());

describe("GET /v1/admin/jobs", () => {
  test("lists the five jobs with their schedules, last and next runs", async () => {
    const res = await h.call("GET", "/v1/admin/jobs", { headers: admin.jwt });
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body.success).toBe(true);
    expect(body.data.map((j: Record<string, unknown>) => [j.name, j.schedule, j.nextRunAt, j.lastRunAt, j.lastDurationMs, j.lastError, j.running])).toEqual([
      ["rescore", "*/10 * * * *", "2026-11-21T08:10:00.000Z", null, null, null, false],
      ["verify", "*/2 * * * *", "2026-11-21T08:02:00.000Z", null, null, null, false],
      ["detect-threats", "* * * * *", "2026-11-21T08:01:00.000Z", null, null, null, false],
      ["expire", "0 * * * *", "2026-11-21T09:00:00.000Z", null, null, null, false],
      ["snapshot", "0 3 * * *", "2026-11-22T03:00:00.000Z", null, null, null, false],
    ]);
    for (const job of body.data) expect(typeof job.description).toBe("string");
  });

  test.each([
    ["a user who is not an admin", () => user.jwt, 403, "forbidden"],
    ["an admin's API key", () => admin.apiKey, 401, "unauthorized"],
    ["no credential", () => ({}), 401, "unauthorized"],
  ])("%s is refused", async (_, headers, status, code) => {
    for (const [method, path] of [
      ["GET", "/v1/admin/jobs"],
      ["POST", "/v1/admin/jobs/verify/run"],
    ]) {
      const res = await h.call(method, path, { headers: headers() });
      expect(res.status).toBe(status);
      expect((await bodyOf(res)).code).toBe(code);
    }
  });
});

describe("POST /v1/admin/jobs/{name}/run", () => {
  test("runs the job now and answers with its status afterwards; the list shows the run", async () => {
    const res = await h.call("POST", "/v1/admin/jobs/verify/run", { headers: admin.jwt });
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body).toMatchObject({
      success: true,
      data: { name: "verify", lastRunAt: "2026-11-21T08:00:00.000Z", lastError: null, lastResult: { groups: 0, verified: 0 }, running: false },
    });
    expect(body.data.lastDurationMs).toBeGreaterThanOrEqual(0);
    const list = await bodyOf(await h.call("GET", "/v1/admin/jobs", { headers: admin.jwt }));
    expect(list.data[1]).toEqual(body.data);
  });

  test("snapshot writes a file into <data-dir>/snapshots/", async () => {
    const res = await h.call("POST", "/v1/admin/jobs/snapshot/run", { headers: admin.jwt });
    expect(res.status).toBe(200);
    const { data } = await bodyOf(res);
    expect(data.lastError).toBeNull();
    expect(data.lastResult.file).toBe(join(h.dataDir, "snapshots", "abuse-intel-20261121T080000Z.sqlite"));
    expect(existsSync(data.lastResult.file)).toBe(true);
  });

  test("a failed run answers 200 with the run's error in the status", async () => {
    // A file where the snapshot directory should be: the export cannot write.
    const dir = mkdtempSync(join(tmpdir(), "abuse-intel-jobs-http-"));
    writeFileSync(join(dir, "snapshots"), "not a directory");
    const other = await createHarness({}, { dataDir: dir, ownsDataDir: true });
    try {
      const otherAdmin = await addUser(other, { role: "admin", tier: "enterprise" });
      const res = await other.call("POST", "/v1/admin/jobs/snapshot/run", { headers: otherAdmin.jwt });
      expect(res.status).toBe(200);
      const { data } = await bodyOf(res);
      expect(data).toMatchObject({ name: "snapshot", lastResult: null, running: false });
      expect(data.lastError).toMatch(/EEXIST|ENOTDIR|exists|not a directory/i);
    } finally {
      await other.close();
    }
  });

  test("an unknown job is 404", async () => {
    const res = await h.call("POST", "/v1/admin/jobs/reindex/run", { headers: admin.jwt });
    expect(res.status).toBe(404);
    expect(await bodyOf(res)).toEqual({ success: false, code: "not_found", error: 'No job named "reindex"; jobs: rescore, verify, detect-threats, expire, snapshot' });
  });

  test("a job that is running already is 409, and is not started twice", async () => {
    let runs = 0;
    let release = () => {};
    const slow: Job = {
      name: "slow",
      description: "waits for the test",
      defaultSchedule: "0 * * * *",
      run: () => {
        runs++;
        return new Promise((resolve) => (release = () => resolve({ done: true })));
      },
    };
    // The same services, with a scheduler holding a job the test controls.
    const scheduler = createScheduler({ jobs: [slow], clock: h.clock, store: h.store });
    const services = { ...h.services, scheduler };
    const server = listen(services, createApp(services), { hostname: "127.0.0.1", port: 0 });
    const call = (method: string, path: string) => fetch(`http://127.0.0.1:${server.port}${path}`, { method, headers: admin.jwt });

    const first = call("POST", "/v1/admin/jobs/slow/run");
    await Bun.sleep(5);
    const listed = await bodyOf(await call("GET", "/v1/admin/jobs"));
    expect(listed.data[0].running).toBe(true);
    const second = await call("POST", "/v1/admin/jobs/slow/run");
    expect(second.status).toBe(409);
    expect(await bodyOf(second)).toEqual({ success: false, code: "conflict", error: "Job slow is already running" });

    release();
    const done = await first;
    expect(done.status).toBe(200);
    expect((await bodyOf(done)).data).toMatchObject({ name: "slow", running: false, lastResult: { done: true } });
    expect(runs).toBe(1);
    server.stop(true);
  });
});

describe("GET /v1/threats", () => {
  test("any key may list; empty at first, with pagination", async () => {
    const res = await h.call("GET", "/v1/threats", { headers: user.apiKey });
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({ success: true, data: [], pagination: { limit: 20, offset: 0, total: 0 } });
  });

  test("newest first, limit and offset", async () => {
    // Two bursts, an hour and a half apart, each detected by a run.
    const report = async (ip: string) => {
      const { accessToken } = await h.services.credentials.issueToken(user.user); // the clock moves past a token's life
      const res = await h.call("POST", "/v1/ip/report", { headers: { authorization: `Bearer ${accessToken}` }, json: { ip, category: "ssh" } });
      expect(res.status).toBe(201);
    };
    for (let i = 1; i <= 5; i++) await report(`198.51.100.${i}`);
    await h.services.scheduler.runNow("detect-threats");
    h.clock.advance(90 * 60_000);
    for (let i = 1; i <= 5; i++) await report(`192.0.2.${i}`);
    await h.services.scheduler.runNow("detect-threats");

    const page = await bodyOf(await h.call("GET", "/v1/threats?limit=1&offset=0", { headers: user.apiKey }));
    expect(page.pagination).toEqual({ limit: 1, offset: 0, total: 2 });
    expect(page.data.map((t: { cidr: string }) => t.cidr)).toEqual(["192.0.2.0/24"]);
    const next = await bodyOf(await h.call("GET", "/v1/threats?limit=1&offset=1", { headers: user.apiKey }));
    expect(next.data.map((t: { cidr: string }) => t.cidr)).toEqual(["198.51.100.0/24"]);
  });

  test.each([["limit=0"], ["limit=101"], ["offset=-1"], ["limit=abc"]])("%s is 400", async (query) => {
    const res = await h.call("GET", `/v1/threats?${query}`, { headers: user.apiKey });
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).code).toBe("validation_failed");
  });

  test("needs a credential", async () => {
    expect((await h.call("GET", "/v1/threats")).status).toBe(401);
  });
});
