// Data for the lookup benchmark: a fresh data directory with N reported addresses written straight into the
// `addresses` table (the server builds its index from it at start), one counted account (a large dailyLimit,
// so counting and the X-RateLimit-* headers run) with an API key, and address lists for hits and misses.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config";
import { CATEGORIES } from "../../../src/domain/categories";
import { systemClock } from "../../../src/domain/clock";
import { formatIpv4, formatIpv6 } from "../../../src/domain/ip";
import { hashPassword } from "../../../src/services/accounts/passwords";
import { createServices } from "../../../src/app/create-services";
import { inTransaction, openStore } from "../../../src/store/database";
import { rng } from "../../support/random";

export interface LookupData {
  dataDir: string;
  apiKey: string;
  dailyLimit: number;
  /** Addresses in the index. */
  reported: string[];
  /** Addresses not in the index. */
  unknown: string[];
}

/** Public-looking addresses (the same every run), 90 % IPv4 and 10 % IPv6, none in the `seen` set. */
function addresses(count: number, seed: number, seen: Set<string>): string[] {
  const next = rng(seed);
  const out: string[] = [];
  while (out.length < count) {
    let text: string;
    if (out.length % 10 === 9) {
      const words = [0x2001, 0x0db8, next() & 0xffff, next() & 0xffff, 0, 0, next() & 0xffff, next() & 0xffff];
      text = formatIpv6(words);
    } else {
      const value = next();
      const first = value >>> 24;
      if (first === 0 || first === 127 || first >= 224) continue;
      text = formatIpv4(value);
    }
    if (seen.has(text)) continue;
    seen.add(text);
    out.push(text);
  }
  return out;
}

/**
 * `count` addresses none of which is in `reported`, all distinct, 90 % IPv4 and 10 % IPv6, public-looking: the
 * i-th is a fixed bijection of i (an odd multiplier permutes 32-bit numbers), so millions cost no set of their own.
 */
function unreportedAddresses(count: number, reported: Set<string>): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const mixed = (Math.imul(i, 0x2c1b3c6d) + 0x297a2d39) >>> 0;
    let text: string;
    if (i % 10 === 9) {
      text = formatIpv6([0x20010db8, mixed, 0xabcd0000, i]);
    } else {
      const first = mixed >>> 24;
      if (first === 0 || first === 10 || first === 127 || first >= 224) continue;
      text = formatIpv4(mixed);
    }
    if (!reported.has(text)) out.push(text);
  }
  return out;
}

export async function prepareLookupData(count: number, unknownCount: number): Promise<LookupData> {
  const dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-bench-lookup-"));
  const seen = new Set<string>();
  const reported = addresses(count, 0x9e3779b9, seen);
  const unknown = unreportedAddresses(unknownCount, seen);

  const store = openStore(dataDir);
  const now = Date.now();
  const next = rng(7);
  const insert = store.sqlite.prepare(
    `INSERT INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category,
       first_seen, last_seen, scored_at, rescore_due_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
  );
  inTransaction(store, () => {
    for (const ip of reported) {
      const r = next();
      const total = 1 + (r % 20);
      const mask = (r >>> 8) & ((1 << CATEGORIES.length) - 1) || 1;
      const last = CATEGORIES[31 - Math.clz32(mask)];
      insert.run(ip, ip.includes(":") ? 6 : 4, (r >>> 5) % 101, total, (r >>> 3) % (total + 1), mask, last, now - 86_400_000, now - 3_600_000, now);
    }
  });
  // The server's index is built from the table at start; the change log the triggers wrote is not needed.
  store.sqlite.run("DELETE FROM address_change_log");

  const dailyLimit = 1_000_000_000_000;
  const services = await createServices({ config: { ...defaultConfig(), dataDir, syncMode: "normal" }, clock: systemClock, store });
  const user = services.accounts.insert({ email: "bench@example.test", tier: "free", role: "user", dailyLimit }, await hashPassword("bench password 1234"));
  const { key } = services.apiKeys.create(user.id, "bench");
  await services.stop();
  store.close();
  return { dataDir, apiKey: key, dailyLimit, reported, unknown };
}
