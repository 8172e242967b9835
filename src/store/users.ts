// The `users` table (contract section 3): accounts with their password hashes, which only the accounts service
// reads (store/users.ts hands them out only through `withPasswordHash`).

import { asc, count, eq, isNotNull } from "drizzle-orm";
import type { Role, Tier } from "../domain/principal";
import type { Store } from "./database";
import { users } from "./schema";

export interface UserRow {
  id: number;
  email: string;
  tier: Tier;
  role: Role;
  disabled: boolean;
  /** Overrides the tier's budget; null means the tier's. */
  dailyLimit: number | null;
  createdAt: number;
  updatedAt: number;
}

export type UserValues = Partial<Pick<typeof users.$inferInsert, "tier" | "role" | "disabled" | "dailyLimit" | "updatedAt" | "tokensValidFrom">>;

const userColumns = {
  id: users.id,
  email: users.email,
  tier: users.tier,
  role: users.role,
  disabled: users.disabled,
  dailyLimit: users.dailyLimit,
  createdAt: users.createdAt,
  updatedAt: users.updatedAt,
};

export class UserTable {
  constructor(private readonly store: Store) {}

  /** Inserts an account; throws SQLite's UNIQUE error when the email is taken. */
  insert(values: { email: string; passwordHash: string; tier: Tier; role: Role; dailyLimit: number | null; createdAt: number }): UserRow {
    return this.store.db
      .insert(users)
      .values({ ...values, updatedAt: values.createdAt })
      .returning(userColumns)
      .get() as UserRow;
  }

  list(): UserRow[] {
    return this.store.db.select(userColumns).from(users).orderBy(asc(users.id)).all() as UserRow[];
  }

  get(id: number): UserRow | null {
    return (this.store.db.select(userColumns).from(users).where(eq(users.id, id)).get() as UserRow | undefined) ?? null;
  }

  findByEmail(email: string): UserRow | null {
    return (this.store.db.select(userColumns).from(users).where(eq(users.email, email)).get() as UserRow | undefined) ?? null;
  }

  count(): number {
    return this.store.db.select({ n: count() }).from(users).get()?.n ?? 0;
  }

  /** The account with its password hash, for a login check only. */
  withPasswordHash(email: string): (UserRow & { passwordHash: string }) | null {
    return (this.store.db.select({ ...userColumns, passwordHash: users.passwordHash }).from(users).where(eq(users.email, email)).get() as (UserRow & { passwordHash: string }) | undefined) ?? null;
  }

  update(id: number, values: UserValues): UserRow {
    return this.store.db.update(users).set(values).where(eq(users.id, id)).returning(userColumns).get() as UserRow;
  }

  /** The id of the account with this email, compared without case (the CSV import's --reporter). */
  idOfEmailAnyCase(email: string): number | null {
    return this.store.sqlite.query<{ id: number }, [string]>("SELECT id FROM users WHERE lower(email) = lower(?)").get(email)?.id ?? null;
  }

  /** Per account that has one: the time before which its tokens were issued are refused (see the column). */
  tokensValidFrom(): Map<number, number> {
    const rows = this.store.db.select({ id: users.id, from: users.tokensValidFrom }).from(users).where(isNotNull(users.tokensValidFrom)).all();
    return new Map(rows.map((r) => [r.id, r.from as number]));
  }

  enabledAdminCount(): number {
    return this.store.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM users WHERE role = 'admin' AND disabled = 0").get()?.n ?? 0;
  }
}
