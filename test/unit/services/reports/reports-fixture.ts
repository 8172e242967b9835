// A store in a temporary directory with the report services wired as the server wires them (scorer, index,
// publisher), a manual clock and users made with one INSERT each: the unit tests of reports, report states and
// the import share it.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../../../src/domain/clock";
import type { Ip } from "../../../../src/domain/ip";
import { parseIp } from "../../../../src/domain/ip";
import type { ReportInput } from "../../../../src/domain/report-input";
import { DEFAULT_SCORING_PARAMETERS, type Severity } from "../../../../src/domain/scoring";
import type { Category } from "../../../../src/domain/categories";
import { NOT_FOUND } from "../../../../src/index/radix-common";
import { ReputationIndex } from "../../../../src/index/reputation-index";
import { AddressChangePublisher } from "../../../../src/services/changes/address-changes";
import { createAddressScorer } from "../../../../src/services/reports/scorer";
import { CreditService } from "../../../../src/services/reports/credits";
import { ReportStateService } from "../../../../src/services/reports/states";
import { ReportService } from "../../../../src/services/reports/intake";
import { openStore, type Store } from "../../../../src/store/database";

export interface ReportFixture {
  dir: string;
  store: Store;
  clock: ManualClock;
  index: ReputationIndex;
  publisher: AddressChangePublisher;
  reports: ReportService;
  states: ReportStateService;
  credits: CreditService;
  /** Addresses the publisher announced, in order. */
  announced: string[];
  /** How many times a commit nudged the webhook dispatcher. */
  nudges: { count: number };
  addUser(email?: string): number;
  close(): void;
}

let users = 0;

export function createReportFixture(options: { maxBatch?: number; busyTimeoutMs?: number; busyGiveUpMs?: number } = {}): ReportFixture {
  const dir = mkdtempSync(join(tmpdir(), "abuse-intel-reports-"));
  const store = openStore(dir, { busyTimeoutMs: options.busyTimeoutMs });
  const clock = new ManualClock();
  const params = DEFAULT_SCORING_PARAMETERS;
  const scorer = createAddressScorer(store, params);
  const index = new ReputationIndex();
  const publisher = new AddressChangePublisher(index);
  const announced: string[] = [];
  publisher.onAddressChanged((ip) => announced.push(ip.text));
  const nudges = { count: 0 };
  const onEventQueued = () => nudges.count++;
  const reports = new ReportService({ store, clock, scorer, changes: publisher, onEventQueued, maxBatch: options.maxBatch, busyGiveUpMs: options.busyGiveUpMs });
  const states = new ReportStateService({ store, clock, scorer, params, changes: publisher, onEventQueued });
  return {
    dir,
    store,
    clock,
    index,
    publisher,
    reports,
    states,
    credits: new CreditService(store),
    announced,
    nudges,
    addUser(email = `reporter${++users}@example.test`) {
      const now = clock.now();
      return Number(
        store.sqlite
          .query("INSERT INTO users (email, password_hash, tier, role, disabled, created_at, updated_at) VALUES (?, 'x', 'free', 'user', 0, ?, ?)")
          .run(email, now, now).lastInsertRowid,
      );
    },
    close() {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function reportInput(ip: string, category: Category = "SSH", severity: Severity = 3, description = ""): ReportInput {
  return { ip: parseIp(ip), category, severity, description, evidence: null, shape: "B" };
}

/** The index's record of an address, or null when it is not in the index. */
export function indexed(index: ReputationIndex, ip: string | Ip) {
  const slot = index.slotOf(typeof ip === "string" ? parseIp(ip) : ip);
  return slot === NOT_FOUND ? null : index.record(slot);
}

export function rows<T = Record<string, unknown>>(store: Store, sql: string, ...params: (string | number | null)[]): T[] {
  return store.sqlite.query(sql).all(...params) as T[];
}

export function outboxData(store: Store, event: string): Record<string, unknown>[] {
  return rows<{ data: string }>(store, "SELECT data FROM outbox WHERE event = ? ORDER BY id", event).map((r) => JSON.parse(r.data));
}
