// The allowlist (contract section 6): networks that never appear on a blocklist. Their addresses keep their
// reports and scores and show `isAllowlisted: true`. Kept in the store and mirrored in a CidrSet.

import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { tryParseCidr, type Cidr, type Ip } from "../../domain/ip";
import { CidrSet } from "../../index/cidr-set";
import type { Store } from "../../store/database";
import { type AllowlistRow, AllowlistTable } from "../../store/allowlist";
import { Listeners } from "../../domain/listeners";

export interface AllowlistEntry {
  id: string;
  cidr: string;
  note: string;
  createdAt: string;
}

export interface Allowlist {
  contains(ip: Ip): boolean;
  /** The networks in force, for the blocklist walk. */
  readonly set: CidrSet;
  list(): AllowlistEntry[];
  add(cidrText: string, note: string, actorUserId: number | null): AllowlistEntry;
  /** Removes by CIDR text or by id; false when there was no such entry. */
  remove(cidrOrId: string): boolean;
  /** Re-reads the table (after another process committed); announces a change only when the rows differ. */
  reload(): void;
  /** Called after every change made here. */
  onChange(listener: () => void): void;
}

export function parseAllowlistCidr(input: unknown): Cidr {
  if (typeof input !== "string" || input.length === 0) {
    throw new AppError("validation_failed", "cidr is required", { details: [{ field: "cidr", message: "is required: an address or CIDR such as 192.0.2.0/24" }] });
  }
  const parsed = tryParseCidr(input);
  if (typeof parsed === "string") {
    throw new AppError("validation_failed", `cidr is not valid: ${parsed}`, { details: [{ field: "cidr", message: parsed }] });
  }
  return parsed;
}

export function createAllowlist(store: Store, clock: Clock): Allowlist {
  const set = new CidrSet();
  const listeners = new Listeners("allowlist change");
  const changed = () => listeners.emit();
  const view = (row: AllowlistRow): AllowlistEntry => ({
    id: String(row.id),
    cidr: row.cidr,
    note: row.note,
    createdAt: new Date(row.createdAt).toISOString(),
  });

  const table = new AllowlistTable(store);
  /** The rows the set was made from (id and CIDR of each): a reload that finds the same changes nothing. */
  let loaded = "";
  const rowsKey = (rows: readonly AllowlistRow[]) => rows.map((r) => `${r.id} ${r.cidr}`).join("\n");

  /**
   * Makes the set from the table; false when it holds what the set was made from. Another process's commit of
   * anything (a CLI `user add`, even a read-only `check`) reloads the allowlist, and a change announced every
   * time moved every blocklist's ETag, so firewalls downloaded whole unchanged lists again.
   */
  function reload(): boolean {
    const rows = table.all();
    const key = rowsKey(rows);
    if (key === loaded) return false;
    loaded = key;
    set.clear();
    for (const row of rows) {
      const cidr = tryParseCidr(row.cidr);
      if (typeof cidr !== "string") set.add(cidr, row.id);
    }
    return true;
  }
  reload();
  const written = () => {
    loaded = rowsKey(table.all());
    changed();
  };

  return {
    set,
    contains: (ip) => set.contains(ip),
    list: () => table.all().map(view),
    add(cidrText, note, actorUserId) {
      const cidr = parseAllowlistCidr(cidrText);
      if (typeof note !== "string" || note.length > 1024) {
        throw new AppError("validation_failed", "note must be a string of at most 1,024 characters", { details: [{ field: "note", message: "at most 1,024 characters" }] });
      }
      const existing = table.byCidr(cidr.text);
      if (existing) throw new AppError("conflict", `${cidr.text} is already allowlisted`);
      const row = table.insert({ cidr: cidr.text, note, createdAt: clock.now(), createdBy: actorUserId });
      set.add(cidr, row.id);
      written();
      return view(row);
    },
    remove(cidrOrId) {
      const byId = /^\d+$/.test(cidrOrId);
      let text = cidrOrId;
      if (!byId) text = parseAllowlistCidr(cidrOrId).text;
      const row = table.remove(byId ? { id: Number(cidrOrId) } : { cidr: text });
      if (!row) return false;
      const cidr = tryParseCidr(row.cidr);
      if (typeof cidr !== "string") set.delete(cidr);
      written();
      return true;
    },
    reload() {
      if (reload()) changed();
    },
    onChange: (listener) => void listeners.add(listener),
  };
}
