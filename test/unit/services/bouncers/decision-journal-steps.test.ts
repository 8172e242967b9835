// A bouncer filter's journal synced in steps (issue 29): read back from the store after a restart, compared with
// the whole list, and its order rebuilt a step at a time, it ends as the journal synced at once does; a second
// sync cannot start while one is under way.

import { expect, test } from "bun:test";
import { Pace } from "../../../../src/domain/pace";
import { FilterJournal } from "../../../../src/services/bouncers/decision-journal";
import type { DecisionList } from "../../../../src/services/bouncers/decision-list";
import { DecisionJournalTables } from "../../../../src/store/decision-journal";

const N = 20_000;
const listOf = (ids: number[]): DecisionList => ({ ids: Float64Array.from(ids), v6: new Map() });
const first = Array.from({ length: N }, (_, i) => 1 + i * 64 * 3 + 32);
/** The first list with every 7th id gone and a few new ones. */
const second = [...first.filter((_, i) => i % 7 !== 0), 1 + (N * 3 + 1) * 64 + 32, 1 + (N * 3 + 2) * 64 + 32];

function entered(journal: FilterJournal, from: number, to: number): number[] {
  const seen: number[] = [];
  journal.eachEnteredIn(from, to, (id) => seen.push(id), { entriesVisited: 0 });
  return seen;
}

test("after a restart the journal is read and compared in steps, and ends as the one synced at once", () => {
  const tables = DecisionJournalTables.inMemory();
  const before = new FilterJournal("HIGH||false", tables, () => listOf(first));
  before.sync(1, 0, 1_000);
  before.sync(2, 1, 2_000, listOf(second));
  const third = [...second.slice(5), 1 + (N * 3 + 9) * 64 + 32];
  before.sync(3, 2, 3_000, listOf(third));

  // A restart: a new journal on the same tables, synced with the list now in steps of 1,000 ids.
  const after = new FilterJournal("HIGH||false", tables, () => listOf(third));
  const steps = after.syncInSteps(4, 0, 4_000, listOf(third), new Pace(1_000));
  let yields = 0;
  for (let next = steps.next(); !next.done; next = steps.next()) yields++;
  // The checkpoint's ids merged with the changes, then the order rebuilt (not in id order: entries entered at
  // 1, 2 and 3): several passes over the list.
  expect(yields).toBeGreaterThanOrEqual((3 * third.length) / 1_000);
  expect(after.seq).toBe(before.seq);
  expect([...after.list.ids]).toEqual([...before.list.ids]);
  for (const [from, to] of [[0, 3], [1, 3], [2, 3], [0, 1]]) expect(entered(after, from, to)).toEqual(entered(before, from, to));
  expect(after.changesSince(1).length).toBe(before.changesSince(1).length);
});

test("a sync cannot start while one in steps is under way; once it ended, the next follows", () => {
  const tables = DecisionJournalTables.inMemory();
  const journal = new FilterJournal("LOW||false", tables, () => listOf(first));
  const steps = journal.syncInSteps(1, 0, 1_000, listOf(first), new Pace(1_000));
  steps.next();
  expect(() => journal.sync(1, 0, 1_000)).toThrow(/being synced already/);
  for (let next = steps.next(); !next.done; next = steps.next());
  journal.sync(2, 1, 2_000, listOf(second));
  expect(journal.seq).toBe(2);
  expect(entered(journal, 1, 2).sort((a, b) => a - b)).toEqual(second.slice(-2));
});
