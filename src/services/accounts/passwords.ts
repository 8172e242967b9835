// Password hashing (argon2id through Bun.password) and the random secrets the product hands out (generated
// passwords, API keys): base62 text drawn from crypto random bytes without modulo bias.

import { randomBytes } from "node:crypto";

export const PASSWORD_MIN_LENGTH = 8;
/** Bounds the work one login can cause: argon2 hashes any length, the request should not. */
export const PASSWORD_MAX_LENGTH = 1024;

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id" });
}

export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  try {
    return await Bun.password.verify(password, hash);
  } catch {
    // A malformed stored hash is a failed login, not a 500.
    return false;
  }
}

let dummyHash: Promise<string> | null = null;

/**
 * Spends the time of one real verification and fails: a login for an unknown email then takes as long as a
 * wrong password for a known one, so response times do not reveal which emails have accounts.
 */
export async function verifyAgainstNothing(password: string): Promise<false> {
  dummyHash ??= hashPassword(randomBase62(24));
  await verifyPassword(password, await dummyHash);
  return false;
}

/** Why a password is not acceptable, or null when it is. */
export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (password.length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return null;
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** 248 = 4 × 62: bytes at or above it are dropped so every character is equally likely. */
const UNBIASED_BELOW = 248;

/** `length` characters of [0-9A-Za-z] from the operating system's CSPRNG, uniformly distributed. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    // ~3 % of bytes are rejected; ask for a little more than needed so one draw nearly always suffices.
    const bytes = randomBytes(Math.ceil((length - out.length) * 1.1) + 4);
    for (let i = 0; i < bytes.length && out.length < length; i++) {
      const b = bytes[i];
      if (b < UNBIASED_BELOW) out += BASE62[b % 62];
    }
  }
  return out;
}

/** A password for accounts the product creates itself (first admin, `user add` without a password). */
export function generatePassword(): string {
  return randomBase62(24);
}
