// The `forwarded_reports` table (contract 18): each report an edge forwarded, by the edge's id, with the first
// result the primary gave it, written in the transaction that stored (or refused) the report.

import type { Database } from "bun:sqlite";

/** What the primary answered for one forwarded report, kept and given again for the same id. */
export interface ForwardedResult {
  id: string;
  status: "accepted" | "refused";
  /** The stored report's id (accepted). */
  reportId?: string;
  /** Why it was refused: the contract's error code and message. */
  code?: string;
  message?: string;
}

export function forwardedReportStatements(sqlite: Database) {
  return {
    /** The first results of those of the ids (a JSON array) already stored. */
    firstResults: sqlite.prepare<{ result: string }, [string]>(
      "SELECT result FROM forwarded_reports WHERE id IN (SELECT value FROM json_each(?))",
    ),
    record: sqlite.prepare<never, [string, number, string, number]>("INSERT INTO forwarded_reports (id, user_id, result, created_at) VALUES (?, ?, ?, ?)"),
  };
}

/** The results stored for these ids, or an empty array when none was forwarded before. */
export function firstForwardedResults(statements: ReturnType<typeof forwardedReportStatements>, ids: readonly string[]): ForwardedResult[] {
  return statements.firstResults.all(JSON.stringify(ids)).map((r) => JSON.parse(r.result) as ForwardedResult);
}
