// An edge's forward queue (contract 18), in its own small database in <data-dir>/edge/forward-queue.sqlite: the
// reports it acknowledged and has not yet handed to its primary, the times each client reported each address (for
// the duplicate rule), and the last reports the primary refused. Durable (WAL, synchronous FULL): a report is
// acknowledged only after the commit that holds it.

import { Database } from "bun:sqlite";

/** A report as the queue holds it, in acceptance order (`seq`). */
export interface QueuedReportRow {
  seq: number;
  id: string;
  group_id: string;
  at: number;
  own_time: number;
  source: string;
  /** The report in `/v1/ip/report`'s shape B, as JSON. */
  report: string;
}

export interface NewQueuedReport {
  id: string;
  group: string;
  client: string;
  ip: string;
  at: number;
  ownTime: boolean;
  source: string;
  report: string;
  acceptedAt: number;
}

export interface RefusedReport {
  id: string;
  ip: string;
  code: string;
  message: string;
  refusedAt: number;
}

/** How many refused reports the file keeps (the last few are listed in /readyz). */
const REFUSED_KEPT = 100;

export class ForwardQueueFile {
  private readonly db: Database;
  private readonly stmt;
  private readonly appendAll: (rows: readonly NewQueuedReport[]) => void;
  private readonly settleAll: (done: readonly string[], refused: readonly RefusedReport[]) => void;

  constructor(path: string) {
    this.db = new Database(path, { create: true, readwrite: true, strict: true });
    this.db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000");
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS queued (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, group_id TEXT NOT NULL,
        at INTEGER NOT NULL, own_time INTEGER NOT NULL, source TEXT NOT NULL, report TEXT NOT NULL, accepted_at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS accepted (client TEXT NOT NULL, ip TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (client, ip)) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS accepted_at ON accepted (at);
      CREATE TABLE IF NOT EXISTS refused (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, ip TEXT NOT NULL, code TEXT NOT NULL,
        message TEXT NOT NULL, refused_at INTEGER NOT NULL);
    `);
    this.stmt = {
      count: this.db.prepare<{ n: number }, []>("SELECT count(*) AS n FROM queued"),
      insert: this.db.prepare<unknown, [string, string, number, number, string, string, number]>(
        "INSERT INTO queued (id, group_id, at, own_time, source, report, accepted_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      accepted: this.db.prepare<unknown, [string, string, number]>("INSERT OR REPLACE INTO accepted (client, ip, at) VALUES (?, ?, ?)"),
      oldest: this.db.prepare<QueuedReportRow, [number]>("SELECT seq, id, group_id, at, own_time, source, report FROM queued ORDER BY seq LIMIT ?"),
      remove: this.db.prepare<unknown, [string]>("DELETE FROM queued WHERE id IN (SELECT value FROM json_each(?))"),
      refuse: this.db.prepare<unknown, [string, string, string, string, number]>("INSERT INTO refused (id, ip, code, message, refused_at) VALUES (?, ?, ?, ?, ?)"),
      trimRefused: this.db.prepare<unknown, [number]>("DELETE FROM refused WHERE seq <= (SELECT max(seq) FROM refused) - ?"),
      lastRefused: this.db.prepare<RefusedReport, [number]>(
        "SELECT id, ip, code, message, refused_at AS refusedAt FROM refused ORDER BY seq DESC LIMIT ?",
      ),
      acceptedSince: this.db.prepare<{ client: string; ip: string; at: number }, [number]>("SELECT client, ip, at FROM accepted WHERE at > ?"),
      pruneAccepted: this.db.prepare<unknown, [number]>("DELETE FROM accepted WHERE at <= ?"),
    };
    this.appendAll = this.db.transaction((rows: readonly NewQueuedReport[]) => {
      for (const r of rows) {
        this.stmt.insert.run(r.id, r.group, r.at, r.ownTime ? 1 : 0, r.source, r.report, r.acceptedAt);
        this.stmt.accepted.run(r.client, r.ip, r.acceptedAt);
      }
    });
    this.settleAll = this.db.transaction((done: readonly string[], refused: readonly RefusedReport[]) => {
      this.stmt.remove.run(JSON.stringify(done));
      for (const r of refused) this.stmt.refuse.run(r.id, r.ip, r.code, r.message, r.refusedAt);
      if (refused.length > 0) this.stmt.trimRefused.run(REFUSED_KEPT);
    }) as unknown as (done: readonly string[], refused: readonly RefusedReport[]) => void;
  }

  /** Reports waiting. */
  count(): number {
    return this.stmt.count.get()!.n;
  }

  /** Appends reports (in this order) and their clients' acceptance times, in one durable transaction. */
  append(rows: readonly NewQueuedReport[]): void {
    this.appendAll(rows);
  }

  /** The first `limit` reports waiting, oldest first. */
  oldest(limit: number): QueuedReportRow[] {
    return this.stmt.oldest.all(limit);
  }

  /** Removes what the primary answered for (`done`: accepted or refused), recording the refusals, in one transaction. */
  settle(done: readonly string[], refused: readonly RefusedReport[]): void {
    this.settleAll(done, refused);
  }

  lastRefused(limit: number): RefusedReport[] {
    return this.stmt.lastRefused.all(limit);
  }

  /** The last acceptance of each (client, address) after `cutoffMs`. */
  acceptedSince(cutoffMs: number): { client: string; ip: string; at: number }[] {
    return this.stmt.acceptedSince.all(cutoffMs);
  }

  pruneAccepted(cutoffMs: number): void {
    this.stmt.pruneAccepted.run(cutoffMs);
  }

  close(): void {
    this.db.close();
  }
}
