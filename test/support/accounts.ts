// Accounts for tests: a user with a known password, a user access token and an API key, made through the
// real services. The argon2id hash of the shared test password is computed once per process (it takes
// ~0.1 s), so tests can make many users cheaply.

import type { User } from "../../src/services/accounts/accounts";
import type { Role, Tier } from "../../src/domain/principal";
import { hashPassword } from "../../src/services/accounts/passwords";
import type { Harness } from "./harness";

export const TEST_PASSWORD = "correct horse battery staple";
let testPasswordHash: Promise<string> | null = null;
let counter = 0;

export interface TestUser {
  user: User;
  password: string;
  /** A user access token (JWT), issued without a login. */
  token: string;
  /** An API key of the user. */
  key: string;
  keyId: number;
  /** Headers for the user JWT. */
  jwt: Record<string, string>;
  /** Headers for the API key in X-API-Key. */
  apiKey: Record<string, string>;
  /** Headers for the API key as a bearer value. */
  bearerKey: Record<string, string>;
}

export interface TestUserOptions {
  email?: string;
  tier?: Tier;
  role?: Role;
  dailyLimit?: number | null;
}

export async function addUser(h: Harness, options: TestUserOptions = {}): Promise<TestUser> {
  testPasswordHash ??= hashPassword(TEST_PASSWORD);
  const { accounts, apiKeys, credentials } = h.services;
  const user = accounts.insert(
    {
      email: options.email ?? `user${++counter}-${process.pid}@example.test`,
      tier: options.tier ?? "free",
      role: options.role ?? "user",
      dailyLimit: options.dailyLimit ?? null,
    },
    await testPasswordHash,
  );
  const { accessToken } = await credentials.issueToken(user);
  const { record, key } = apiKeys.create(user.id, "test key");
  return {
    user,
    password: TEST_PASSWORD,
    token: accessToken,
    key,
    keyId: record.id,
    jwt: { authorization: `Bearer ${accessToken}` },
    apiKey: { "x-api-key": key },
    bearerKey: { authorization: `Bearer ${key}` },
  };
}
