// Carries committed address changes out of the store: after a transaction that rescored addresses commits, their
// new records go into the in-memory index and every listener (the reputation response cache, anything else that
// mirrors an address) hears which addresses changed. Never called before the commit, so nothing outside the store
// shows what the store does not hold.

import type { Ip } from "../../domain/ip";
import type { AddressRecord } from "../../index/reputation-index";
import { Listeners } from "../../domain/listeners";

/** The part of the reputation index a writer needs. */
export interface AddressIndexWriter {
  upsert(ip: Ip, record: AddressRecord): void;
  remove(ip: Ip): unknown;
}

export type AddressChangeListener = (ip: Ip) => void;

/** Rescored addresses of one transaction, by normalized text; the last record of an address wins. */
export class AddressChanges {
  private readonly byText = new Map<string, { ip: Ip; record: AddressRecord | null }>();

  /** Notes `ip`'s record as the scorer returned it (null: the address has no counting reports any more). */
  set(ip: Ip, record: AddressRecord | null): void {
    this.byText.set(ip.text, { ip, record });
  }

  get size(): number {
    return this.byText.size;
  }

  entries(): Iterable<{ ip: Ip; record: AddressRecord | null }> {
    return this.byText.values();
  }
}

export class AddressChangePublisher {
  private readonly listeners = new Listeners<[Ip]>("address change");

  /** `index` null: a process with no index (a CLI command); the server notices such commits by itself. */
  constructor(private readonly index: AddressIndexWriter | null) {}

  /** Calls `listener` with each address whose record changed, after the commit; returns the unsubscriber. */
  onAddressChanged(listener: AddressChangeListener): () => void {
    return this.listeners.add(listener);
  }

  /** Call after the commit of the transaction that produced `changes`. */
  publish(changes: AddressChanges): void {
    for (const { ip, record } of changes.entries()) {
      if (this.index) {
        if (record) this.index.upsert(ip, record);
        else this.index.remove(ip);
      }
      this.listeners.emit(ip);
    }
  }
}
