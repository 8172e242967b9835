// Benchmark of report ingest (issue 4): POST /v1/ip/report over HTTP against a real Bun.serve on 127.0.0.1, at
// concurrency 64, every report durable (committed, synchronous=FULL) before its 201, with authentication and rate
// limiting on the path. The ceiling, measured in the same run, is batched raw SQLite inserts of report rows into
// the same schema with the same durability, in batches of the size the HTTP run's group commit formed.
// The load comes from a separate process (this script with --client), so it does not share the server's thread.
// Run: npx bun test/bench/ingest.bench.ts [--reports N] [--concurrency C]

import { listen } from "../../src/http/server";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databasePath, inTransaction, openStore } from "../../src/store/database";

const TARGET_REPORTS_PER_SECOND = 2_000;

function argNumber(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

/** The n-th benchmark address: distinct for every n below 2^24, so no report is a duplicate. */
function addressOf(n: number): string {
  return `10.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

interface ClientPlan {
  url: string;
  tokens: string[];
  first: number;
  total: number;
  concurrency: number;
}

interface ClientResult {
  ok: number;
  failed: number;
  statuses: Record<string, number>;
  elapsedMs: number;
  latenciesMs: number[];
}

// ---------------------------------------------------------------------------------------------------------
// The load generator (a separate process)

async function runClient(plan: ClientPlan): Promise<ClientResult> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  const statuses: Record<string, number> = {};
  const latenciesMs: number[] = [];
  const categories = ["SSH", "BRUTE_FORCE", "PORT_SCAN", "WEB_ATTACK"];
  async function worker(w: number) {
    const headers = { authorization: `Bearer ${plan.tokens[w % plan.tokens.length]}`, "content-type": "application/json" };
    for (;;) {
      const i = next++;
      if (i >= plan.total) return;
      const n = plan.first + i;
      const body = JSON.stringify({ ip: addressOf(n), category: categories[n & 3], severity: (n % 5) + 1, description: "benchmark" });
      const start = performance.now();
      const res = await fetch(plan.url, { method: "POST", headers, body });
      await res.arrayBuffer();
      latenciesMs.push(performance.now() - start);
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 201) ok++;
      else failed++;
    }
  }
  const start = performance.now();
  await Promise.all(Array.from({ length: plan.concurrency }, (_, w) => worker(w)));
  return { ok, failed, statuses, elapsedMs: performance.now() - start, latenciesMs };
}

async function runClientProcess(plan: ClientPlan): Promise<ClientResult> {
  const proc = Bun.spawn([process.execPath, import.meta.path, "--client"], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  proc.stdin.write(JSON.stringify(plan));
  await proc.stdin.end();
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(out) as ClientResult;
}

// ---------------------------------------------------------------------------------------------------------
// The ceiling: batched raw inserts into the same schema, durable

function rawInsertCeiling(total: number, batchSize: number): number {
  const dir = mkdtempSync(join(tmpdir(), "abuse-intel-bench-raw-"));
  const store = openStore(dir);
  try {
    const now = Date.parse("2026-11-21T08:00:00.000Z");
    const userId = Number(
      store.sqlite
        .query("INSERT INTO users (email, password_hash, tier, role, disabled, created_at, updated_at) VALUES ('raw@bench', 'x', 'pro', 'user', 0, ?, ?)")
        .run(now, now).lastInsertRowid,
    );
    const insert = store.sqlite.prepare(
      `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, evidence, status, source, created_at, status_changed_at)
       VALUES (?, 4, ?, 'SSH', 3, 'benchmark', NULL, 'pending', 'api', ?, ?)`,
    );
    const start = performance.now();
    for (let done = 0; done < total; ) {
      const size = Math.min(batchSize, total - done);
      inTransaction(store, () => {
        for (let i = 0; i < size; i++) insert.run(addressOf(done + i), userId, now, now);
      });
      done += size;
    }
    return total / ((performance.now() - start) / 1000);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------
// The server side and the report

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const total = argNumber("--reports", 20_000);
  const concurrency = argNumber("--concurrency", 64);
  const warmup = Math.min(1_000, Math.ceil(total / 10));

  const { createHarness } = await import("../support/harness");
  const { addUser } = await import("../support/accounts");
  // The product's default durability (the test harness defaults to NORMAL for speed).
  const h = await createHarness({ syncMode: "full" });
  const server = listen(h.services, h.app, { hostname: "127.0.0.1", port: 0 });
  try {
    const synchronous = (h.store.sqlite.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    const journal = (h.store.sqlite.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode;
    // One reporter per connection, as appliances reporting from many hosts would be; the pro tier keeps rate
    // limiting (counting and headers) on the path.
    const users = await Promise.all(Array.from({ length: concurrency }, () => addUser(h, { tier: "pro" })));
    const tokens = users.map((u) => u.token);
    const url = `http://127.0.0.1:${server.port}/v1/ip/report`;
    console.log(`# report ingest benchmark: ${total.toLocaleString("en")} reports over HTTP at concurrency ${concurrency} (after ${warmup} warm-up)`);
    console.log(`# SQLite journal_mode=${journal}, synchronous=${synchronous === 2 ? "FULL" : synchronous === 1 ? "NORMAL" : synchronous}: each 201 follows a durable commit`);

    await runClientProcess({ url, tokens, first: 0, total: warmup, concurrency });
    const before = { ...h.services.reports.stats };
    const result = await runClientProcess({ url, tokens, first: warmup, total, concurrency });
    const batches = h.services.reports.stats.batches - before.batches;
    const meanBatch = (h.services.reports.stats.reports - before.reports) / Math.max(1, batches);

    // Every acknowledged report is in the file: read it with a separate connection.
    const other = new Database(databasePath(h.dataDir), { readonly: true });
    const stored = (other.query("SELECT count(*) AS n FROM reports").get() as { n: number }).n;
    other.close();

    const perSecond = result.ok / (result.elapsedMs / 1000);
    const latencies = result.latenciesMs.sort((a, b) => a - b);
    const ceiling = rawInsertCeiling(total, Math.max(1, Math.round(meanBatch)));

    console.log(`HTTP ingest:  ${result.ok.toLocaleString("en")} × 201 in ${(result.elapsedMs / 1000).toFixed(2)} s = ${Math.round(perSecond).toLocaleString("en")} reports/s` +
      (result.failed > 0 ? ` (${result.failed} failed: ${JSON.stringify(result.statuses)})` : ""));
    console.log(`              latency p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms; ${batches} commits, mean batch ${meanBatch.toFixed(1)} reports`);
    console.log(`ceiling:      batched raw INSERTs into reports, ${Math.round(meanBatch)} per durable commit = ${Math.round(ceiling).toLocaleString("en")} reports/s`);
    console.log(`ratio:        ${(perSecond / ceiling).toFixed(3)} of the ceiling`);
    console.log(`stored:       ${stored.toLocaleString("en")} reports in the file (expected ${(warmup + result.ok).toLocaleString("en")})`);
    const pass = perSecond >= TARGET_REPORTS_PER_SECOND && result.failed === 0 && stored === warmup + result.ok;
    console.log(`${pass ? "PASS" : "FAIL"}  ingest ≥ ${TARGET_REPORTS_PER_SECOND.toLocaleString("en")} durable reports/s over HTTP: ${Math.round(perSecond).toLocaleString("en")}`);
    process.exitCode = pass ? 0 : 1;
  } finally {
    server.stop(true);
    await h.close();
  }
}

if (process.argv.includes("--client")) {
  const plan = JSON.parse(await Bun.stdin.text()) as ClientPlan;
  process.stdout.write(JSON.stringify(await runClient(plan)));
} else {
  await main();
}
