// A firewall bouncer's load for benchmarks: a data directory whose default bouncer filter lists N addresses (all
// CRITICAL, written straight into `addresses`; the server builds its index from it at start) with an API key, and
// a bouncer pulling the decisions stream like Debian's crowdsec-firewall-bouncer: the startup answer once (read by
// curl in its own process), then a delta pull every `everyMs`.
// The paced benchmark's "a bouncer listing 1 M pulling every second":
//   const data = await prepareListedData(1_000_000);  // then serve --data-dir data.dataDir
//   await startupPull(url, data.apiKey); const pulls = pullEvery(url, data.apiKey, 1000);  ...  await pulls.stop();

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServices } from "../../../src/app/create-services";
import { defaultConfig } from "../../../src/config";
import { CATEGORIES } from "../../../src/domain/categories";
import { systemClock } from "../../../src/domain/clock";
import { formatIpv4 } from "../../../src/domain/ip";
import { hashPassword } from "../../../src/services/accounts/passwords";
import { inTransaction, openStore } from "../../../src/store/database";
import { rng } from "../../support/random";

export interface ListedData {
  dataDir: string;
  apiKey: string;
  /** The listed addresses (distinct public-looking IPv4). */
  listed: string[];
}

/** A fresh data directory with `count` CRITICAL IPv4 addresses (every bouncer's default list) and an API key. */
export async function prepareListedData(count: number, seed = 11): Promise<ListedData> {
  const dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-bench-listed-"));
  const store = openStore(dataDir);
  const next = rng(seed);
  const seen = new Set<number>();
  const listed: string[] = [];
  while (listed.length < count) {
    const value = next() >>> 0;
    const first = value >>> 24;
    if (first === 0 || first === 10 || first === 127 || first >= 224 || seen.has(value)) continue;
    seen.add(value);
    listed.push(formatIpv4(value));
  }
  const now = Date.now();
  const insert = store.sqlite.prepare(
    `INSERT INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
       first_seen, last_seen, scored_at, rescore_due_at) VALUES (?, 4, 10, 3, 0, ?, 'BRUTE_FORCE', ?, ?, ?, NULL)`,
  );
  inTransaction(store, () => {
    for (const ip of listed) insert.run(ip, 1 << CATEGORIES.indexOf("BRUTE_FORCE"), now - 86_400_000, now - 3_600_000, now);
  });
  store.sqlite.run("DELETE FROM address_change_log");
  const services = await createServices({ config: { ...defaultConfig(), dataDir, syncMode: "normal" }, clock: systemClock, store });
  const user = services.accounts.insert({ email: "bouncer-bench@example.test", tier: "enterprise", role: "user", dailyLimit: null }, await hashPassword("bench password 1234"));
  const { key } = services.apiKeys.create(user.id, "bench bouncer");
  await services.stop();
  store.close();
  return { dataDir, apiKey: key, listed };
}

export interface BouncerPulls {
  /** Stops pulling after the pull under way; the delta pulls answered 200, those that failed, the slowest (ms). */
  stop(): Promise<{ pulls: number; slowestMs: number; failures: number }>;
}

/**
 * The startup pull (`startup=true`) of `url` (`http://127.0.0.1:PORT`) with `key`, read whole by curl in its own
 * process (so this one's heap never holds it): its wall time in ms and its size in bytes.
 */
export async function startupPull(url: string, key: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const curl = Bun.spawn(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "-H", `X-Api-Key: ${key}`, `${url}/v1/decisions/stream?startup=true`], { stdout: "pipe" });
  const [code, bytes] = (await new Response(curl.stdout).text()).trim().split(" ").map(Number);
  await curl.exited;
  if (code !== 200) throw new Error(`the bouncer's startup pull answered ${code}`);
  return { ms: performance.now() - started, bytes };
}

/** A delta pull (`GET /v1/decisions/stream?`) every `everyMs`, as Debian's bouncer sends after its first, until stopped. */
export function pullEvery(url: string, key: string, everyMs: number): BouncerPulls {
  let stopped = false;
  let pulls = 0;
  let failures = 0;
  let slowestMs = 0;
  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      try {
        const res = await fetch(`${url}/v1/decisions/stream?`, { headers: { "X-Api-Key": key } });
        await res.arrayBuffer();
        if (res.status === 200) pulls++;
        else failures++;
      } catch {
        failures++;
      }
      const took = performance.now() - started;
      slowestMs = Math.max(slowestMs, took);
      if (!stopped) await Bun.sleep(Math.max(0, everyMs - took));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { pulls, slowestMs, failures };
    },
  };
}
