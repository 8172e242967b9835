// A whole instance for the job tests: the real services and app on a temporary data directory with a manual
// clock, reporters, a real webhook receiver on 127.0.0.1 and helpers to report, run a job and deliver.

import type { EventKind } from "../../../src/domain/webhook-payload";
import type { JobStatus } from "../../../src/jobs/scheduler";
import { addUser, type TestUser } from "../../support/accounts";
import { bodyOf, createHarness, type Harness } from "../../support/harness";
import { type Receiver, startReceiver } from "../../support/webhook-receiver";
import type { Config } from "../../../src/config";

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const SECRET = "jobs-test-secret-0123456789";

export interface JobsFixture {
  h: Harness;
  receiver: Receiver;
  reporters: TestUser[];
  /** A report through the API as `reporter` (default the first); fails the test unless it is accepted. */
  report(ip: string, json?: Record<string, unknown>, reporter?: TestUser): Promise<string>;
  run(name: string): Promise<JobStatus>;
  /** Subscribes the receiver to `events` (as the first reporter). */
  subscribe(events: EventKind[]): void;
  /** Delivers everything queued and returns the bodies the receiver got so far, parsed. */
  delivered(): Promise<{ event: string; timestamp: string; data: Record<string, unknown> }[]>;
  close(): Promise<void>;
}

export async function createJobsFixture(reporterCount = 1, overrides: Partial<Config> = {}): Promise<JobsFixture> {
  const h = await createHarness(overrides);
  const receiver = startReceiver();
  const reporters: TestUser[] = [];
  for (let i = 0; i < reporterCount; i++) reporters.push(await addUser(h, { tier: "enterprise" }));
  return {
    h,
    receiver,
    reporters,
    async report(ip, json = {}, reporter = reporters[0]) {
      // A token issued now: the clock moves by days in these tests, past any token's lifetime.
      const { accessToken } = await h.services.credentials.issueToken(reporter.user);
      const res = await h.call("POST", "/v1/ip/report", {
        headers: { authorization: `Bearer ${accessToken}` },
        json: { ip, category: "brute-force", severity: 5, ...json },
      });
      const body = await bodyOf(res);
      if (res.status !== 201) throw new Error(`report of ${ip} refused: ${res.status} ${JSON.stringify(body)}`);
      return body.reportId as string;
    },
    run: (name) => h.services.scheduler.runNow(name),
    subscribe(events) {
      h.services.webhooks.create(reporters[0].user.id, { url: receiver.url, events, secret: SECRET });
    },
    async delivered() {
      await h.services.webhookDispatcher.tick();
      return receiver.requests.map((r) => JSON.parse(r.body));
    },
    async close() {
      await receiver.stop();
      await h.close();
    },
  };
}
