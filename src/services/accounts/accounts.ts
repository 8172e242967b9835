// User accounts (contract section 3): creating, listing and changing them, password checks, and the first
// administrator made on the first start of an empty database. Password hashes never leave this module.

import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../../domain/clock";
import { isoTime } from "../../domain/clock";
import { AppError, type FieldError } from "../../domain/errors";
import type { Role, Tier } from "../../domain/principal";
import { inTransaction, type Store } from "../../store/database";
import { type UserRow, UserTable, type UserValues } from "../../store/users";
import { generatePassword, hashPassword, PASSWORD_MAX_LENGTH, passwordProblem, verifyAgainstNothing, verifyPassword } from "./passwords";
import type { ApiKeys } from "./api-keys";
import { dailyBudgetOf } from "./rate-limiter";
import { Listeners } from "../../domain/listeners";

export const TIERS: readonly Tier[] = ["free", "pro", "enterprise"];
export const ROLES: readonly Role[] = ["user", "admin"];
export const EMAIL_MAX_LENGTH = 254;
/** Largest accepted dailyLimit: far above any real budget, well inside SQLite's and JavaScript's integers. */
export const DAILY_LIMIT_MAX = 1_000_000_000_000;

/** An account as the API shows it: never its password hash. */
export type User = UserRow;

export interface NewUser {
  email: string;
  password: string;
  tier: Tier;
  role: Role;
  dailyLimit: number | null;
}

export interface UserPatch {
  tier?: Tier;
  role?: Role;
  disabled?: boolean;
  dailyLimit?: number | null;
}

type Listener = () => void;

export class Accounts {
  private readonly listeners = new Listeners("account change");
  private readonly table: UserTable;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {
    this.table = new UserTable(store);
  }

  /** Called after every change this instance makes (other connections' changes reach the change watcher). */
  onChange(listener: Listener): () => void {
    return this.listeners.add(listener);
  }

  async create(input: NewUser): Promise<User> {
    const problem = passwordProblem(input.password);
    if (problem) throw new AppError("validation_failed", "The request is not valid", { details: [{ field: "password", message: problem }] });
    this.assertEmailFree(input.email);
    return this.insert(input, await hashPassword(input.password));
  }

  /** Inserts an account whose password is already hashed (synchronous, so it can join a transaction). */
  insert(input: Omit<NewUser, "password">, passwordHash: string): User {
    this.assertEmailFree(input.email);
    const now = this.clock.now();
    let row: User;
    try {
      row = this.table.insert({ email: input.email, passwordHash, tier: input.tier, role: input.role, dailyLimit: input.dailyLimit, createdAt: now });
    } catch (error) {
      // Another connection (a CLI command) may have taken the email since the check.
      if (String((error as Error).message).includes("UNIQUE")) throw emailTaken(input.email);
      throw error;
    }
    this.changed();
    return row;
  }

  list(): User[] {
    return this.table.list();
  }

  /** Per account disabled at some time: the time before which its tokens were issued are refused. */
  tokensValidFrom(): Map<number, number> {
    return this.table.tokensValidFrom();
  }

  get(id: number): User | null {
    return this.table.get(id);
  }

  findByEmail(email: string): User | null {
    return this.table.findByEmail(email);
  }

  count(): number {
    return this.table.count();
  }

  /**
   * The account whose email and password match, disabled or not (the caller decides what a disabled account
   * may do), or null. Takes as long for an unknown email as for a wrong password.
   */
  async checkPassword(email: string, password: string): Promise<User | null> {
    const row = this.table.withPasswordHash(email);
    if (!row || password.length > PASSWORD_MAX_LENGTH) {
      await verifyAgainstNothing(password.slice(0, PASSWORD_MAX_LENGTH));
      return null;
    }
    if (!(await verifyPassword(password, row.passwordHash))) return null;
    const { passwordHash: _hash, ...user } = row;
    return user as User;
  }

  update(id: number, patch: UserPatch): User {
    const updated = inTransaction(this.store, () => {
      const current = this.get(id);
      if (!current) throw new AppError("not_found", `No user with id ${id}`);
      const losesAdmin = current.role === "admin" && !current.disabled && (patch.role === "user" || patch.disabled === true);
      if (losesAdmin && this.enabledAdminCount() <= 1) {
        throw new AppError("conflict", `${current.email} is the last enabled administrator; make another account admin first`);
      }
      const values: UserValues = { updatedAt: this.clock.now() };
      if (patch.tier !== undefined) values.tier = patch.tier;
      if (patch.role !== undefined) values.role = patch.role;
      if (patch.disabled !== undefined) values.disabled = patch.disabled;
      // Disabling ends every token and console session issued so far, for good: enabling the account again must
      // not bring back one that leaked (the reason to disable it). From the next whole second, as tokens carry
      // their issue time in seconds; a login in that same second after enabling again is refused once.
      if (patch.disabled === true && !current.disabled) values.tokensValidFrom = Math.ceil((this.clock.now() + 1) / 1000) * 1000;
      if (patch.dailyLimit !== undefined) values.dailyLimit = patch.dailyLimit;
      return this.table.update(id, values);
    });
    this.changed();
    return updated;
  }

  private enabledAdminCount(): number {
    return this.table.enabledAdminCount();
  }

  private assertEmailFree(email: string): void {
    if (this.findByEmail(email)) throw emailTaken(email);
  }

  private changed(): void {
    this.listeners.emit();
  }
}

function emailTaken(email: string): AppError {
  return new AppError("conflict", `A user with the email ${email} already exists`);
}

// ---- parsing at the edge (HTTP bodies, CLI flags) ----

const EMAIL_PATTERN = /^[^\s@\x00-\x1f\x7f]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/;

/** The stored form of an email (trimmed, lowercase), or null when it is not an email address. */
export function normalizeEmail(raw: string): string | null {
  const email = raw.trim().toLowerCase();
  return email.length <= EMAIL_MAX_LENGTH && EMAIL_PATTERN.test(email) ? email : null;
}

/** Collects field problems and throws them together as one validation_failed. */
class FieldCheck {
  readonly problems: FieldError[] = [];
  fail(field: string, message: string): undefined {
    this.problems.push({ field, message });
    return undefined;
  }
  done(): void {
    if (this.problems.length > 0) throw new AppError("validation_failed", "The request is not valid", { details: this.problems });
  }
}

function asObject(raw: unknown): Record<string, unknown> {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new AppError("validation_failed", "The request body must be a JSON object", {
      details: [{ field: "(body)", message: "must be a JSON object" }],
    });
  }
  return raw as Record<string, unknown>;
}

function checkEmail(check: FieldCheck, value: unknown): string | undefined {
  if (typeof value !== "string") return check.fail("email", "is required and must be a string");
  return normalizeEmail(value) ?? check.fail("email", "is not a valid email address");
}

function checkEnum<T extends string>(check: FieldCheck, field: string, value: unknown, allowed: readonly T[]): T | undefined {
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  return check.fail(field, `must be one of ${allowed.join(", ")}`);
}

function checkDailyLimit(check: FieldCheck, value: unknown): number | null | undefined {
  if (value === null) return null;
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && value <= DAILY_LIMIT_MAX) return value;
  return check.fail("dailyLimit", `must be an integer from 0 to ${DAILY_LIMIT_MAX}, or null for the tier's budget`);
}

/** A POST /v1/admin/users body (or the CLI's flags as an object) → a NewUser, or validation_failed. */
export function parseNewUser(raw: unknown): NewUser {
  const body = asObject(raw);
  const check = new FieldCheck();
  const email = checkEmail(check, body.email);
  let password: string | undefined;
  if (typeof body.password !== "string") check.fail("password", "is required and must be a string");
  else {
    const problem = passwordProblem(body.password);
    if (problem) check.fail("password", problem);
    else password = body.password;
  }
  const tier = checkEnum(check, "tier", body.tier, TIERS);
  const role = body.role === undefined ? "user" : checkEnum(check, "role", body.role, ROLES);
  const dailyLimit = body.dailyLimit === undefined ? null : checkDailyLimit(check, body.dailyLimit);
  check.done();
  return { email: email!, password: password!, tier: tier!, role: role!, dailyLimit: dailyLimit! };
}

/** A PATCH /v1/admin/users/{id} body → a UserPatch with at least one field, or validation_failed. */
export function parseUserPatch(raw: unknown): UserPatch {
  const body = asObject(raw);
  const check = new FieldCheck();
  const patch: UserPatch = {};
  if (body.tier !== undefined) patch.tier = checkEnum(check, "tier", body.tier, TIERS);
  if (body.role !== undefined) patch.role = checkEnum(check, "role", body.role, ROLES);
  if (body.disabled !== undefined) {
    if (typeof body.disabled === "boolean") patch.disabled = body.disabled;
    else check.fail("disabled", "must be true or false");
  }
  if (body.dailyLimit !== undefined) patch.dailyLimit = checkDailyLimit(check, body.dailyLimit);
  if (check.problems.length === 0 && Object.keys(patch).length === 0) {
    check.fail("(body)", "give at least one of tier, role, disabled, dailyLimit");
  }
  check.done();
  return patch;
}

/** A POST /v1/auth/login body → the email (the login normalizes it) and the password, or validation_failed. */
export function parseLogin(raw: unknown): { email: string; password: string } {
  const body = asObject(raw);
  const check = new FieldCheck();
  if (typeof body.email !== "string" || body.email.trim() === "") check.fail("email", "is required and must be a string");
  if (typeof body.password !== "string" || body.password === "") check.fail("password", "is required and must be a string");
  check.done();
  // An email that is not one cannot have an account: it fails like a wrong password, not with a 400.
  return { email: body.email as string, password: body.password as string };
}

// ---- the first administrator ----

export const INITIAL_CREDENTIALS_FILE = "initial-credentials.txt";

export interface InitialAdmin {
  user: User;
  /** The generated password, or null when it came from the configuration. */
  password: string | null;
  apiKey: string;
  file: string;
}

/**
 * On the first start with an empty database: creates the administrator (`admin@localhost` or the configured
 * email, role admin, tier enterprise) with a random or configured password and an API key, prints both once
 * and writes them to `<data-dir>/initial-credentials.txt` (mode 0600). Does nothing when any user exists.
 * `printSecrets: false` (output kept as a log others read: the journal, JSON for a SIEM) prints only where they are.
 */
export async function ensureInitialAdmin(
  deps: { store: Store; accounts: Accounts; apiKeys: ApiKeys; clock: Clock },
  options: { dataDir: string; adminEmail: string | null; adminPassword: string | null; printSecrets?: boolean },
  print: (text: string) => void = (text) => console.log(text),
): Promise<InitialAdmin | null> {
  if (deps.accounts.count() > 0) return null;
  const email = normalizeEmail(options.adminEmail ?? "admin@localhost");
  if (!email) throw new AppError("bad_request", `ABUSE_INTEL_ADMIN_EMAIL is not a valid email address: "${options.adminEmail}"`);
  const generated = options.adminPassword === null ? generatePassword() : null;
  const password = options.adminPassword ?? generated!;
  const problem = passwordProblem(password);
  if (problem) throw new AppError("bad_request", `ABUSE_INTEL_ADMIN_PASSWORD ${problem}`);
  const hash = await hashPassword(password);

  // Checked again inside the write transaction: another process may have started on the same directory.
  const made = inTransaction(deps.store, () => {
    if (deps.accounts.count() > 0) return null;
    const user = deps.accounts.insert({ email, tier: "enterprise", role: "admin", dailyLimit: null }, hash);
    const { key } = deps.apiKeys.create(user.id, "initial admin key");
    return { user, key };
  });
  if (!made) return null;

  const file = join(options.dataDir, INITIAL_CREDENTIALS_FILE);
  const passwordLine = generated ?? "(the one set in ABUSE_INTEL_ADMIN_PASSWORD)";
  const text = [
    "abuse-intel: first start: created the administrator account.",
    `  email:    ${email}`,
    `  password: ${passwordLine}`,
    `  API key:  ${made.key}`,
    `Created ${isoTime(deps.clock.now())}. These are shown once; store them safely and delete this file.`,
    "",
  ].join("\n");
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
  if (options.printSecrets === false) {
    print(`abuse-intel: first start: created the administrator account ${email}; its password and API key are in ${file} (mode 0600, not logged): read them there, store them safely and delete the file`);
    return { user: made.user, password: generated, apiKey: made.key, file };
  }
  print(
    [
      "abuse-intel: first start: created the administrator account (shown only this once):",
      `  email:    ${email}`,
      `  password: ${passwordLine}`,
      `  API key:  ${made.key}`,
      `  (also written to ${file}, mode 0600: delete it once stored safely)`,
    ].join("\n"),
  );
  return { user: made.user, password: generated, apiKey: made.key, file };
}

/** An account as operators see it (never the password hash). */
export function userView(user: User) {
  return {
    id: String(user.id),
    email: user.email,
    tier: user.tier,
    role: user.role,
    disabled: user.disabled,
    dailyLimit: user.dailyLimit,
    /** The budget in force (dailyLimit, else the tier's); null is unlimited. */
    dailyBudget: dailyBudgetOf(user),
    createdAt: isoTime(user.createdAt),
    updatedAt: isoTime(user.updatedAt),
  };
}
