// The bouncer filters' journals in the store: a change of the list is its change rows alone (the journal's row,
// with the whole list's blobs, is written only with a checkpoint: rewriting it for each change cost 0.3 s at 1 M
// listed), and the journal read back has the newest change's sequence number.

import { expect, test } from "bun:test";
import { DecisionJournalTables } from "../../../src/store/decision-journal";

test("appends leave the checkpoint row as written; the journal read back ends at the newest change", () => {
  const tables = DecisionJournalTables.inMemory();
  const ids = Float64Array.from([65, 129, 193]);
  tables.writeCheckpoint("HIGH||false", { seq: 1, checkpointSeq: 1, prunedSeq: 0, ids, entered: new Uint32Array(3).fill(1), v6Values: {} });
  tables.append("HIGH||false", 2, 1_000, [257], [], () => null, null);
  tables.append("HIGH||false", 3, 2_000, [], [65], () => null, null);
  const db = (tables as unknown as { db: import("bun:sqlite").Database }).db;
  expect(db.query("SELECT seq FROM decision_journals").all()).toEqual([{ seq: 1 }]);
  const read = tables.checkpoint("HIGH||false")!;
  expect(read.seq).toBe(3);
  expect(read.checkpointSeq).toBe(1);
  expect([...read.ids]).toEqual([65, 129, 193]);
  expect(tables.changesSince("HIGH||false", 1).map((c) => [c.seq, c.id, c.entered])).toEqual([
    [2, 257, true],
    [3, 65, false],
  ]);
  // Another filter's changes are not this one's.
  tables.append("LOW||false", 9, 3_000, [321], [], () => null, null);
  expect(tables.checkpoint("HIGH||false")!.seq).toBe(3);
  // A checkpoint carries its own seq; changes after it still end the journal.
  tables.append("HIGH||false", 4, 4_000, [385], [], () => null, { seq: 4, checkpointSeq: 4, prunedSeq: 0, ids: Float64Array.from([129, 193, 257, 385]), entered: Uint32Array.from([1, 1, 2, 4]), v6Values: {} });
  tables.append("HIGH||false", 5, 5_000, [449], [], () => null, null);
  expect(tables.checkpoint("HIGH||false")).toMatchObject({ seq: 5, checkpointSeq: 4 });
});
