// The report load generator of the ingest benchmarks (ingest.bench.ts, edge-forward.bench.ts): reporters made in
// the data directory before the server starts, request files each sending every report once (a report sent twice
// by one reporter within the duplicate window is a 429), and wrk posting them.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServices } from "../../../src/app/create-services";
import { defaultConfig } from "../../../src/config";
import { systemClock } from "../../../src/domain/clock";
import { hashPassword } from "../../../src/services/accounts/passwords";
import { openStore } from "../../../src/store/database";
import { runWrk, type WrkResult } from "./wrk";

const CATEGORIES = ["SSH", "BRUTE_FORCE", "PORT_SCAN", "WEB_ATTACK"];

/** The n-th new address: in 10.0.0.0/8, distinct for every n below 2^24. */
export function newAddress(n: number): string {
  return `10.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/**
 * `count` reporters (pro tier: rate limiting counts and heads every answer) with access tokens, made before the
 * server starts, and an administrator's API key (an edge's follow and forward key).
 */
export async function makeReporters(dataDir: string, count: number): Promise<{ tokens: string[]; apiKey: string }> {
  const store = openStore(dataDir);
  const services = await createServices({ config: { ...defaultConfig(), dataDir, syncMode: "normal" }, clock: systemClock, store });
  const hash = await hashPassword("bench password 1234");
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const user = services.accounts.insert({ email: `reporter${i}@example.test`, tier: "pro", role: "user", dailyLimit: null }, hash);
    tokens.push((await services.credentials.issueToken(user)).accessToken);
  }
  const owner = services.accounts.insert({ email: "forwarder@example.test", tier: "enterprise", role: "admin", dailyLimit: null }, hash);
  const { key: apiKey } = services.apiKeys.create(owner.id, "forward");
  await services.stop();
  store.close();
  return { tokens, apiKey };
}

/**
 * Request files for wrk's `reports` mode: each report once, alternately a stored address (`stored`, taken in
 * turn) and a new one, the credentials in turn.
 */
export class ReportRequests {
  private nextStored = 0;
  private nextNew = 0;
  private readonly storedSet: Set<string>;

  constructor(
    private readonly dir: string,
    private readonly stored: readonly string[],
  ) {
    this.storedSet = new Set(stored);
  }

  /** Writes `count` requests sent with `credentials` (each line's bearer value, in turn) to `name`; returns its path. */
  file(name: string, count: number, credentials: readonly string[]): string {
    const lines: string[] = [];
    for (let i = 0; i < count; i++) {
      let ip: string;
      if (i % 2 === 0 && this.nextStored < this.stored.length) ip = this.stored[this.nextStored++]!;
      else while (this.storedSet.has((ip = newAddress(this.nextNew++))));
      const n = this.nextStored + this.nextNew;
      lines.push(`${credentials[n % credentials.length]}\t${JSON.stringify({ ip, category: CATEGORIES[n & 3], severity: (n % 5) + 1, description: "benchmark" })}`);
    }
    const file = join(this.dir, name);
    writeFileSync(file, lines.join("\n") + "\n");
    return file;
  }
}

/** One run of wrk sending each line of `requestsFile` once; per second counts the 2xx answers only. */
export async function runReports(url: string, requestsFile: string, options: { seconds: number; connections: number; core: number }): Promise<WrkResult> {
  const result = await runWrk({ url, scriptArgs: ["reports", "/v1/ip/report", requestsFile], connections: options.connections, seconds: options.seconds, core: options.core });
  result.perSecond = (result.requests - result.status) / (result.durationUs / 1e6);
  return result;
}
