// The bouncers themselves (contract 14): `bouncer add|list|delete`. A bouncer is an API key of the service account
// `bouncers@abuse-intel.local` with a filter, a mode and a duration; deleting it revokes the key.

import { randomBytes } from "node:crypto";
import { CATEGORIES, parseCategoryList } from "../../domain/categories";
import type { Clock } from "../../domain/clock";
import { MAX_DECISION_DURATION_SECONDS, goDuration, parseGoDuration } from "../../domain/decisions";
import { AppError, notFound, validationFailed } from "../../domain/errors";
import { parseRiskLevel } from "../../domain/risk";
import type { BouncerMode, BouncerRow, BouncerTables } from "../../store/bouncers";
import { inTransaction, type Store } from "../../store/database";
import type { Accounts } from "../accounts/accounts";
import type { ApiKeys } from "../accounts/api-keys";
import { hashPassword } from "../accounts/passwords";
import { BOUNCER_ACCOUNT } from "../../domain/principal";

export const BOUNCER_MODES: readonly BouncerMode[] = ["nftables", "ipset", "iptables"];

export interface BouncerView {
  name: string;
  mode: BouncerMode;
  minimumRisk: string;
  categories: string[] | null;
  duration: string;
  createdAt: string;
  keyId: number;
  lastPullAt: string | null;
  lastPullFrom: string | null;
  lastUsageMetricsAt: string | null;
}

export function parseBouncerName(input: unknown): string {
  if (typeof input !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(input)) {
    throw validationFailed([{ field: "name", message: "a bouncer's name is 1-64 letters, digits, . _ - (starting with a letter or digit)" }]);
  }
  return input;
}

export interface BouncerRegistryDeps {
  store: Store;
  tables: BouncerTables;
  accounts: Accounts;
  apiKeys: ApiKeys;
  clock: Clock;
}

export class BouncerRegistry {
  private readonly tables: BouncerTables;

  constructor(private readonly deps: BouncerRegistryDeps) {
    this.tables = deps.tables;
  }

  async add(input: { name: string; minimumRisk?: string; categories?: string; mode?: string; duration?: string }): Promise<{ bouncer: BouncerView; key: string }> {
    const name = parseBouncerName(input.name);
    const minimumRisk = input.minimumRisk === undefined ? "HIGH" : parseRiskLevel(input.minimumRisk.toUpperCase(), "--risk-level");
    const asked = input.categories === undefined ? null : parseCategoryList(input.categories, "--category");
    // In the contract's order, whatever order they were given in.
    const categories = asked === null ? null : CATEGORIES.filter((c) => asked.includes(c));
    const mode = (input.mode ?? "nftables") as BouncerMode;
    if (!BOUNCER_MODES.includes(mode)) throw validationFailed([{ field: "mode", message: `--mode is one of ${BOUNCER_MODES.join(", ")}` }]);
    const seconds = input.duration === undefined ? MAX_DECISION_DURATION_SECONDS : parseGoDuration(input.duration);
    if (seconds === null || seconds < 60 || seconds > MAX_DECISION_DURATION_SECONDS) {
      throw validationFailed([{ field: "duration", message: "--duration is a Go duration from 1m to 596h (ipset's longest timeout), e.g. 596h or 24h" }]);
    }
    if (this.tables.byName(name) !== null) throw new AppError("conflict", `A bouncer named ${name} exists; delete it first`);
    const owner = this.deps.accounts.findByEmail(BOUNCER_ACCOUNT) ?? this.deps.accounts.insert({ email: BOUNCER_ACCOUNT, tier: "enterprise", role: "user", dailyLimit: null }, await hashPassword(randomBytes(32).toString("base64")));
    let key = "";
    inTransaction(this.deps.store, () => {
      const created = this.deps.apiKeys.create(owner.id, `bouncer ${name}`);
      key = created.key;
      this.tables.insert({ name, apiKeyId: created.record.id, minimumRisk, categories: categories?.join(",") ?? null, mode, durationSeconds: seconds, createdAt: this.deps.clock.now() });
    });
    return { bouncer: this.view(this.tables.byName(name) as BouncerRow), key };
  }

  list(): BouncerView[] {
    return this.tables.list().map((row) => this.view(row));
  }

  remove(name: string): void {
    const row = this.tables.byName(name);
    if (row === null) throw notFound(`No bouncer named ${name}`);
    inTransaction(this.deps.store, () => {
      this.tables.remove(row);
      this.deps.apiKeys.revoke(row.apiKeyId);
    });
  }

  private view(row: BouncerRow): BouncerView {
    const pulls = this.tables.pulls().filter((p) => p.apiKeyId === row.apiKeyId);
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return {
      name: row.name,
      mode: row.mode,
      minimumRisk: row.minimumRisk,
      categories: row.categories === null ? null : row.categories.split(","),
      duration: goDuration(row.durationSeconds),
      createdAt: iso(row.createdAt) as string,
      keyId: row.apiKeyId,
      lastPullAt: iso(pulls[0]?.lastPullAt ?? null),
      lastPullFrom: pulls[0]?.clientAddress ?? null,
      lastUsageMetricsAt: iso(row.lastMetricsAt),
    };
  }
}
