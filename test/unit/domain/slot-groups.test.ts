// SlotGroups (the detection window's groups) against a plain model: a Map of arrays, slots appended and taken
// out at random; every group lists its slots in the order they joined.

import { expect, test } from "bun:test";
import { SlotGroups } from "../../../src/domain/slot-groups";
import { rng } from "../../support/random";

test("random appends and removals, with growth: each group holds what a map of arrays holds, in order", () => {
  const next = rng(17);
  let capacity = 4;
  const groups = new SlotGroups<number>(capacity);
  const model = new Map<number, number[]>();
  const groupOf = new Map<number, number>();
  let top = 0;
  const free: number[] = [];
  for (let step = 0; step < 20_000; step++) {
    if (groupOf.size === 0 || next() % 3 !== 0) {
      let slot = free.pop();
      if (slot === undefined) {
        if (top === capacity) groups.grow((capacity *= 2));
        slot = top++;
      }
      const key = next() % 25;
      groups.append(key, slot);
      model.set(key, [...(model.get(key) ?? []), slot]);
      groupOf.set(slot, key);
    } else {
      const slots = [...groupOf.keys()];
      const slot = slots[next() % slots.length];
      const key = groupOf.get(slot)!;
      groups.remove(key, slot);
      const left = model.get(key)!.filter((s) => s !== slot);
      if (left.length === 0) model.delete(key);
      else model.set(key, left);
      groupOf.delete(slot);
      free.push(slot);
    }
    if (step % 500 === 0 || step > 19_900) {
      expect(groups.groupCount).toBe(model.size);
      for (let key = 0; key < 25; key++) {
        expect(slotsOf(groups, key)).toEqual(model.get(key) ?? []);
        expect(groups.first(key)).toBe(model.get(key)?.[0] ?? -1);
        expect(groups.sizeOf(key, 3)).toBe(Math.min(3, model.get(key)?.length ?? 0));
      }
    }
  }
  expect(capacity).toBeGreaterThan(4);
});

/** A group's slots in the order they joined, walked as the threat window walks them. */
function slotsOf(groups: SlotGroups<number>, key: number): number[] {
  const slots: number[] = [];
  const first = groups.first(key);
  if (first < 0) return slots;
  for (let slot = first; ; ) {
    slots.push(slot);
    slot = groups.following(slot);
    if (slot === first) return slots;
  }
}
