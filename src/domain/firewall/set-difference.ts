// What a sync changes in a set: the entries of the new list that the set lacks, and those it holds that the new
// list dropped. Entries are compared as the appliance writes them (one canonical text per address or network).

export interface SetDifference {
  added: string[];
  removed: string[];
}

export function setDifference(held: ReadonlySet<string>, next: ReadonlySet<string>): SetDifference {
  const added: string[] = [];
  const removed: string[] = [];
  for (const e of next) if (!held.has(e)) added.push(e);
  for (const e of held) if (!next.has(e)) removed.push(e);
  return { added, removed };
}
