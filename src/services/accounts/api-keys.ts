// API keys (contract section 3): `aik_` + 40 random base62 characters, stored only as a SHA-256 hash with a
// short prefix to tell keys apart. Creating, listing, revoking, and recording use cheaply (lastUsedAt is
// written in batches, at most once a minute per key).

import { isoTime } from "../../domain/clock";
import type { Clock } from "../../domain/clock";
import { AppError } from "../../domain/errors";
import { inTransaction, type Store } from "../../store/database";
import { type ActiveKey, type ApiKeyRecord, ApiKeyTable } from "../../store/api-keys";
import { randomBase62 } from "./passwords";
import { Listeners } from "../../domain/listeners";

export const API_KEY_PREFIX = "aik_";
export const API_KEY_RANDOM_LENGTH = 40;
/** Characters of the key kept and shown as its prefix: `aik_` and 8 random ones. */
export const API_KEY_SHOWN_PREFIX_LENGTH = 12;
export const KEY_NAME_MAX_LENGTH = 100;
/** lastUsedAt is exact to this much: a busy key is not a write per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

export type { ActiveKey, ApiKeyRecord };

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBase62(API_KEY_RANDOM_LENGTH);
}

/** Lowercase hex SHA-256 of the whole key: what is stored and what a presented key is looked up by. */
export function hashApiKey(key: string): string {
  return Bun.SHA256.hash(key, "hex") as unknown as string;
}

/** A key's name as given by a person: trimmed, 1..100 characters, no control characters. */
export function parseKeyName(raw: unknown): string {
  const name = typeof raw === "string" ? raw.trim() : "";
  let problem: string | null = null;
  if (typeof raw !== "string") problem = "is required and must be a string";
  else if (name.length === 0) problem = "must not be empty";
  else if (name.length > KEY_NAME_MAX_LENGTH) problem = `must be at most ${KEY_NAME_MAX_LENGTH} characters`;
  else if (/[\x00-\x1f\x7f]/.test(name)) problem = "must not contain control characters";
  if (problem) throw new AppError("validation_failed", "The request is not valid", { details: [{ field: "name", message: problem }] });
  return name;
}

type Listener = () => void;

export class ApiKeys {
  private readonly listeners = new Listeners("API key change");
  /** Uses not yet written: key id → time of use. */
  private readonly pendingUse = new Map<number, number>();

  private readonly table: ApiKeyTable;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {
    this.table = new ApiKeyTable(store);
  }

  /** Called after every key this instance creates or revokes. */
  onChange(listener: Listener): () => void {
    return this.listeners.add(listener);
  }

  /** Creates a key for `userId`; the key itself is returned only here. */
  create(userId: number, name: string): { record: ApiKeyRecord; key: string } {
    const key = generateApiKey();
    const record = this.table.insert({ userId, name, prefix: key.slice(0, API_KEY_SHOWN_PREFIX_LENGTH), keyHash: hashApiKey(key), createdAt: this.clock.now() });
    this.changed();
    return { record, key };
  }

  /** The keys of one user, oldest first; revoked ones only when asked. */
  listForUser(userId: number, options: { includeRevoked?: boolean } = {}): ApiKeyRecord[] {
    this.flushUsage();
    return this.table.ofUser(userId, options.includeRevoked ?? false);
  }

  /** Every key that is not revoked, for the credential cache. */
  listActive(): ActiveKey[] {
    return this.table.active();
  }

  /**
   * Revokes key `id`. With `ownerId` only that user's key is found (a user revoking their own); without it any
   * key (an operator). An unknown, foreign or already revoked key is not_found.
   */
  revoke(id: number, ownerId?: number): ApiKeyRecord {
    this.flushUsage();
    const record = inTransaction(this.store, () => {
      const found = this.table.get(id);
      if (!found || found.revokedAt !== null || (ownerId !== undefined && found.userId !== ownerId)) {
        throw new AppError("not_found", `No active API key with id ${id}`);
      }
      return this.table.revoke(id, this.clock.now());
    });
    this.changed();
    return record;
  }

  /** Notes that key `id` was used at `at`; written by the next flushUsage. */
  noteUse(id: number, at: number): void {
    this.pendingUse.set(id, at);
  }

  /** Writes the noted uses in one transaction. */
  flushUsage(): void {
    if (this.pendingUse.size === 0) return;
    inTransaction(this.store, () => this.table.writeUses(this.pendingUse));
    // Cleared only once written: a failed write (the database busy) is retried by the next flush.
    this.pendingUse.clear();
  }

  private changed(): void {
    this.listeners.emit();
  }
}

/**
 * A key as clients and operators see it: never the key itself nor its hash. `revokedAt` only on a revoked key
 * (the contract's listing shows active keys with exactly the other five fields).
 */
export function apiKeyView(record: ApiKeyRecord) {
  return {
    id: String(record.id),
    name: record.name,
    prefix: record.prefix,
    createdAt: isoTime(record.createdAt),
    lastUsedAt: record.lastUsedAt === null ? null : isoTime(record.lastUsedAt),
    ...(record.revokedAt === null ? {} : { revokedAt: isoTime(record.revokedAt) }),
  };
}
