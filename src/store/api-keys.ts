// The `api_keys` table (contract section 3): keys by their SHA-256 hash, never the keys themselves.

import { and, asc, eq, isNull } from "drizzle-orm";
import type { Store } from "./database";
import { apiKeys } from "./schema";

export interface ApiKeyRecord {
  id: number;
  userId: number;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** What the credential cache needs of every active key. */
export interface ActiveKey {
  id: number;
  userId: number;
  keyHash: string;
  lastUsedAt: number | null;
}

const recordColumns = {
  id: apiKeys.id,
  userId: apiKeys.userId,
  name: apiKeys.name,
  prefix: apiKeys.prefix,
  createdAt: apiKeys.createdAt,
  lastUsedAt: apiKeys.lastUsedAt,
  revokedAt: apiKeys.revokedAt,
};

export class ApiKeyTable {
  private readonly noteUse;

  constructor(private readonly store: Store) {
    this.noteUse = store.sqlite.prepare<unknown, [number, number]>("UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?");
  }

  insert(values: { userId: number; name: string; prefix: string; keyHash: string; createdAt: number }): ApiKeyRecord {
    return this.store.db.insert(apiKeys).values(values).returning(recordColumns).get();
  }

  ofUser(userId: number, includeRevoked: boolean): ApiKeyRecord[] {
    const where = includeRevoked ? eq(apiKeys.userId, userId) : and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt));
    return this.store.db.select(recordColumns).from(apiKeys).where(where).orderBy(asc(apiKeys.id)).all();
  }

  active(): ActiveKey[] {
    return this.store.sqlite
      .query<ActiveKey, []>("SELECT id, user_id AS userId, key_hash AS keyHash, last_used_at AS lastUsedAt FROM api_keys WHERE revoked_at IS NULL")
      .all();
  }

  get(id: number): ApiKeyRecord | null {
    return this.store.db.select(recordColumns).from(apiKeys).where(eq(apiKeys.id, id)).get() ?? null;
  }

  revoke(id: number, atMs: number): ApiKeyRecord {
    return this.store.db.update(apiKeys).set({ revokedAt: atMs }).where(eq(apiKeys.id, id)).returning(recordColumns).get() as ApiKeyRecord;
  }

  /** Notes uses (key id → time); call inside a transaction. A use never moves lastUsedAt back. */
  writeUses(uses: Iterable<[number, number]>): void {
    for (const [id, at] of uses) this.noteUse.run(at, id);
  }
}
