// Review (intake): while another process holds the write lock (an `import reports`, a `jobs run`), a queued report
// is retried "without blocking the event loop" (src/services/reports/intake.ts). But each retry is a BEGIN
// IMMEDIATE that waits out the server's busy timeout (200 ms) synchronously: one queued report stalls every
// lookup, blocklist and bouncer pull for 200 ms about once a second, for as long as the lock is held (up to the
// 30 s give-up). test/unit/cli/serve-under-lock.test.ts holds lookups to 150 ms under the same lock without a report.

import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { login, startServe, stop, type ServeProcess } from "./intake-support";

const dir = mkdtempSync(join(tmpdir(), "abuse-intel-review-busy-stall-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("one report waiting for another process's lock does not stall lookups (max latency under 150 ms over 5 s)", async () => {
  let server: ServeProcess | null = null;
  let other: Database | null = null;
  try {
    server = await startServe(dir);
    const token = await login(server.url);
    const key = /API key:\s+(aik_\S+)/.exec(readFileSync(join(dir, "initial-credentials.txt"), "utf8"))![1];
    other = new Database(join(dir, "abuse-intel.db"));
    other.exec("BEGIN IMMEDIATE");
    const report = fetch(`${server.url}/v1/ip/report`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ip: "203.0.113.99", category: "SSH", severity: 3 }),
    });
    const latencies: number[] = [];
    const end = performance.now() + 5_000;
    while (performance.now() < end) {
      const started = performance.now();
      const res = await fetch(`${server.url}/v1/ip/203.0.113.9/reputation`, { headers: { "x-api-key": key } });
      await res.arrayBuffer();
      latencies.push(performance.now() - started);
      await Bun.sleep(10);
    }
    other.exec("COMMIT");
    other.close();
    other = null;
    // The report itself goes in once the lock is free.
    expect((await report).status).toBe(201);
    const slow = latencies.filter((ms) => ms > 150).length;
    console.log(`lookups: ${latencies.length}, max ${Math.round(Math.max(...latencies))} ms, over 150 ms: ${slow}`);
    // Observed: max about 200 ms, several lookups over 150 ms (one per retry).
    expect({ max: Math.round(Math.max(...latencies)) < 150, slow }).toEqual({ max: true, slow: 0 });
  } finally {
    if (other?.inTransaction) other.exec("ROLLBACK");
    other?.close();
    await stop(server);
  }
}, 20_000);
