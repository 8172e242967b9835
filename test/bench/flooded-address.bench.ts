// Benchmark of ingest into a flooded address (issue 29): the cost of one report batch (64 reporters, one report
// each, through ReportService as the server runs it: insert, running sums, rescore, commit) on an address that
// already holds 10k / 50k / 200k counting reports from those reporters within retention. The ceiling, measured in
// the same run, is the same batch on an address with no history; the formula path (every counting report read and
// summed again, what ingest did before the running sums) is measured beside it for comparison.
// Target: the flooded batch within 2x of the fresh one at every size, and flat: the largest size within 1.5x of
// the smallest. CPU time per batch (the process's user + system time), the median of the rounds.
// Run: npx bun test/bench/flooded-address.bench.ts [--sizes 10000,50000,200000] [--batches N]   (BENCH_SMALL=1: 2k,10k,40k)

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../src/domain/clock";
import { parseIp } from "../../src/domain/ip";
import { DAY_MS, DEFAULT_SCORING_PARAMETERS, resolveScoringParameters } from "../../src/domain/scoring";
import { ReputationIndex } from "../../src/index/reputation-index";
import { AddressChangePublisher } from "../../src/services/changes/address-changes";
import { ReportService } from "../../src/services/reports/intake";
import { createAddressScorer } from "../../src/services/reports/scorer";
import { inTransaction, openStore, type Store } from "../../src/store/database";

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

const SIZES = (arg("--sizes") ?? (process.env.BENCH_SMALL ? "2000,10000,40000" : "10000,50000,200000")).split(",").map(Number);
const BATCHES = Number(arg("--batches") ?? 15);
const REPORTERS = 64;
const TARGET_VS_FRESH = 2;
const TARGET_GROWTH = 1.5;

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number, d = 2) => x.toFixed(d);

interface Setup {
  dir: string;
  store: Store;
  clock: ManualClock;
  users: number[];
}

function setup(flood: number): Setup {
  const dir = mkdtempSync(join(tmpdir(), "abuse-intel-bench-flood-"));
  const store = openStore(dir, { sync: "normal" });
  const clock = new ManualClock(Date.parse("2026-06-01T00:00:00Z"));
  const users: number[] = [];
  for (let i = 0; i < REPORTERS; i++) {
    users.push(Number(store.sqlite.query("INSERT INTO users (email, password_hash, created_at, updated_at) VALUES (?, 'x', 0, 0)").run(`r${i}@example.test`).lastInsertRowid));
  }
  const insert = store.sqlite.query(
    "INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at) VALUES ('198.51.100.1', 4, ?, 'SSH', 3, '', 'pending', 'import', ?, ?)",
  );
  const now = clock.now();
  inTransaction(store, () => {
    for (let i = 0; i < flood; i++) {
      const at = now - DAY_MS - Math.floor((i / flood) * 300 * DAY_MS);
      insert.run(users[i % REPORTERS]!, at, at);
    }
  });
  return { dir, store, clock, users };
}

/** CPU ms per batch of REPORTERS reports on `ip`, the clock moved past the duplicate window between batches. */
async function batchCost(s: Setup, ip: string, formula: boolean): Promise<number> {
  // A scorer in other units than the sums: it scores every address from its reports (the formula path).
  const params = formula ? resolveScoringParameters({ halfLifeDays: 30.000001 }) : DEFAULT_SCORING_PARAMETERS;
  const scorer = createAddressScorer(s.store, params);
  const reports = new ReportService({ store: s.store, clock: s.clock, scorer, changes: new AddressChangePublisher(new ReputationIndex()), onEventQueued: () => {} });
  const costs: number[] = [];
  for (let b = 0; b < BATCHES + 2; b++) {
    s.clock.advance(16 * 60_000);
    const started = cpuMs();
    await Promise.all(s.users.map((u) => reports.submit(u, { ip: parseIp(ip), category: "SSH", severity: 3, description: "", evidence: null, shape: "B" })));
    if (b >= 2) costs.push(cpuMs() - started); // the first two warm the statements and the JIT
  }
  return median(costs);
}

console.log(`# flooded-address benchmark: one batch of ${REPORTERS} reports (one per reporter) on an address holding N counting reports; ${BATCHES} batches per figure, median CPU ms`);
const results: { size: number; flooded: number; fresh: number; formula: number }[] = [];
for (const size of SIZES) {
  const s = setup(size);
  try {
    const fresh = await batchCost(s, "198.51.100.2", false);
    const flooded = await batchCost(s, "198.51.100.1", false);
    const formula = await batchCost(s, "198.51.100.1", true);
    results.push({ size, flooded, fresh, formula });
    console.log(
      `${size.toLocaleString("en").padStart(8)} reports: flooded ${fmt(flooded)} ms/batch (${fmt((flooded * 1000) / REPORTERS, 0)} µs/report), ` +
        `fresh address (ceiling) ${fmt(fresh)} ms, ratio ${fmt(flooded / fresh)}x (target ≤ ${TARGET_VS_FRESH}x); formula path ${fmt(formula)} ms`,
    );
  } finally {
    s.store.close();
    rmSync(s.dir, { recursive: true, force: true });
  }
}
const growth = results[results.length - 1]!.flooded / results[0]!.flooded;
console.log(`growth from ${SIZES[0]!.toLocaleString("en")} to ${SIZES[SIZES.length - 1]!.toLocaleString("en")} reports: ${fmt(growth)}x (target ≤ ${TARGET_GROWTH}x)`);
const ok = results.every((r) => r.flooded / r.fresh <= TARGET_VS_FRESH) && growth <= TARGET_GROWTH;
console.log(ok ? "targets met" : "TARGET MISSED");
process.exit(ok ? 0 : 1);
