// Benchmark of `GET /v1/ip/recent`'s page reads (contract 5.8): newest report first, then by address, at any
// offset. Pages are read from the addresses_recent index alone; an offset is still walked, so the ceiling, measured
// in the same run, is raw SQLite's cheapest walk to the same offset: the table in rowid order, LIMIT 100 OFFSET n.
// A store of N addresses (300,000 by default) with last_seen in whole hours, so many addresses share one (as an
// import or a busy minute makes them). Target: a page at any offset within 5x the ceiling (+1 ms: the count) and
// under 25 ms (before the index, a page cost a sort of every tie and a walk of table rows: 172 and 342 ms at the
// middle and the end of 300,000 addresses here; 1.2 s at offset 0 of a million sharing one last_seen).
// Run: npx bun test/bench/recent.bench.ts [--addresses N]

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatIpv4 } from "../../src/domain/ip";
import { inTransaction, openStore } from "../../src/store/database";
import { recentAddresses } from "../../src/store/address-rows";
import { rng } from "../support/random";

const at = process.argv.indexOf("--addresses");
const N = at > 0 ? Number(process.argv[at + 1]) : 300_000;
const TARGET_RATIO = 5;
const TARGET_MS = 25;

const dir = mkdtempSync(join(tmpdir(), "abuse-intel-bench-recent-"));
try {
  const store = openStore(dir);
  const next = rng(11);
  const now = Date.now();
  const insert = store.sqlite.prepare(
    `INSERT OR IGNORE INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
       first_seen, last_seen, scored_at, rescore_due_at) VALUES (?, 4, 50, 1, 0, 1, 'SSH', ?, ?, ?, NULL)`,
  );
  inTransaction(store, () => {
    for (let i = 0; i < N; i++) {
      const seen = now - (next() % 500) * 3_600_000;
      insert.run(formatIpv4(next() >>> 0), seen, seen, now);
    }
  });
  const total = recentAddresses(store, 1, 0).total;
  const ceilingRead = store.sqlite.prepare("SELECT ip FROM addresses ORDER BY rowid LIMIT 100 OFFSET ?");
  const timed = (fn: () => unknown) => {
    let best = Number.POSITIVE_INFINITY;
    for (let r = 0; r < 5; r++) {
      const t = performance.now();
      fn();
      best = Math.min(best, performance.now() - t);
    }
    return best;
  };
  console.log(`# GET /v1/ip/recent pages over ${total.toLocaleString("en")} addresses (last_seen in whole hours: ties), best of 5`);
  let ok = true;
  for (const offset of [0, Math.floor(total / 2), total - 100]) {
    const ours = timed(() => recentAddresses(store, 100, offset));
    const ceiling = timed(() => ceilingRead.all(offset));
    const pass = ours <= TARGET_MS && ours <= ceiling * TARGET_RATIO + 1;
    ok &&= pass;
    console.log(`offset ${offset.toLocaleString("en").padStart(9)}: ${ours.toFixed(2)} ms a page (the count included) | ceiling (rowid order, same offset) ${ceiling.toFixed(2)} ms, ratio ${(ours / ceiling).toFixed(2)} -> ${pass ? "PASS" : "FAIL"}`);
  }
  store.close();
  console.log(ok ? `PASS  every page under ${TARGET_MS} ms and within ${TARGET_RATIO}x the ceiling (+1 ms)` : "FAIL  a page was too slow");
  process.exitCode = ok ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
