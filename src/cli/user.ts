// `abuse-intel user add|list|set`: accounts on the local data directory. A running server on the same
// directory sees the change within 2 seconds (its change watcher).

import { resolveConfig } from "../config";
import { isoTime, systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { Accounts, normalizeEmail, parseNewUser, parseUserPatch, userView, type User } from "../services/accounts/accounts";
import { generatePassword } from "../services/accounts/passwords";
import { dailyBudgetOf } from "../services/accounts/rate-limiter";
import { openStore } from "../store/database";
import { flag, hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command } from "./command";

const HELP = [
  "Usage: abuse-intel user <add|list|set> [options]",
  "",
  "  user add --email E --tier free|pro|enterprise [--role user|admin] [--daily-limit N] [--password-stdin]",
  "      Creates an account. Without --password-stdin a random password is generated and printed once: the",
  "      password alone on stdout, the explanation on stderr (so PASSWORD=$(abuse-intel user add ...) works).",
  "  user list [--json]",
  "      Lists the accounts.",
  "  user set --email E [--tier T] [--role R] [--disabled true|false] [--daily-limit N|none]",
  "      Changes an account. A disabled account's tokens and API keys are refused: by a running server at",
  "      its next look at the store (within half a second); --daily-limit overrides the tier's daily",
  "      request budget (none: back to the tier's).",
  "",
  DATA_DIR_HELP,
].join("\n");

export const userCommand: Command = {
  name: "user",
  summary: "manage user accounts (add, list, set)",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    const args = parseArgs(rest, {
      values: ["--data-dir", "--email", "--tier", "--role", "--daily-limit", "--disabled"],
      switches: ["--password-stdin", "--json"],
    });
    if (args.positionals.length > 0) throw new AppError("bad_request", `unexpected argument "${args.positionals[0]}"`);
    const config = resolveConfig(args.flags);
    const store = openStore(config.dataDir);
    try {
      const accounts = new Accounts(store, systemClock);
      switch (sub) {
        case "add": {
          const generated = hasSwitch(args, "--password-stdin") ? null : generatePassword();
          const password = generated ?? stripNewline(await Bun.stdin.text());
          const input = parseNewUser({
            email: required(flag(args, "--email"), "--email"),
            password,
            tier: required(flag(args, "--tier"), "--tier"),
            role: flag(args, "--role"),
            dailyLimit: parseDailyLimit(flag(args, "--daily-limit")) ?? undefined,
          });
          const user = await accounts.create(input);
          console.error(`Created user ${user.id}: ${describe(user)}`);
          if (generated) {
            console.error("Its password, shown only this once:");
            console.log(generated);
          }
          return 0;
        }
        case "list": {
          const users = accounts.list();
          if (hasSwitch(args, "--json")) console.log(JSON.stringify(users.map(userView), null, 2));
          else printTable(users);
          return 0;
        }
        case "set": {
          const user = findUser(accounts, required(flag(args, "--email"), "--email"));
          const disabled = flag(args, "--disabled");
          if (disabled !== undefined && disabled !== "true" && disabled !== "false") {
            throw new AppError("bad_request", `--disabled takes true or false, got "${disabled}"`);
          }
          const patch = parseUserPatch({
            tier: flag(args, "--tier"),
            role: flag(args, "--role"),
            disabled: disabled === undefined ? undefined : disabled === "true",
            dailyLimit: parseDailyLimit(flag(args, "--daily-limit")),
          });
          const updated = accounts.update(user.id, patch);
          console.log(`Updated user ${updated.id}: ${describe(updated)}`);
          return 0;
        }
        default:
          throw new AppError("bad_request", sub === undefined ? `a subcommand is needed\n\n${HELP}` : `unknown subcommand "${sub}"\n\n${HELP}`);
      }
    } finally {
      store.close();
    }
  },
};

/** The account with this email, or a clear error. */
export function findUser(accounts: Accounts, rawEmail: string): User {
  const email = normalizeEmail(rawEmail);
  const user = email === null ? null : accounts.findByEmail(email);
  if (!user) throw new AppError("not_found", `no user with the email "${rawEmail}"`);
  return user;
}

export function required(value: string | undefined, name: string): string {
  if (value === undefined) throw new AppError("bad_request", `${name} is required`);
  return value;
}

/** `--daily-limit`: a whole number, or `none` for the tier's budget; undefined when not given. */
function parseDailyLimit(raw: string | undefined): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === "none") return null;
  if (!/^\d{1,13}$/.test(raw)) throw new AppError("bad_request", `--daily-limit takes a whole number or "none", got "${raw}"`);
  return Number(raw);
}

/** A password piped in ends with the newline of `echo`; that newline is not part of it. */
function stripNewline(text: string): string {
  return text.replace(/\r?\n$/, "");
}

function budgetText(user: User): string {
  const budget = dailyBudgetOf(user);
  const amount = budget === null ? "unlimited" : `${budget} requests/day`;
  return user.dailyLimit === null ? `${amount} (tier)` : `${amount} (daily limit)`;
}

function describe(user: User): string {
  return `${user.email} (tier ${user.tier}, role ${user.role}, ${budgetText(user)}${user.disabled ? ", DISABLED" : ""})`;
}

function printTable(users: User[]): void {
  const rows = [
    ["ID", "EMAIL", "TIER", "ROLE", "DISABLED", "DAILY BUDGET", "CREATED"],
    ...users.map((u) => [String(u.id), u.email, u.tier, u.role, u.disabled ? "yes" : "no", budgetText(u), isoTime(u.createdAt)]),
  ];
  printColumns(rows);
}

/** Prints rows as left-aligned columns. */
export function printColumns(rows: string[][]): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const row of rows) console.log(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join("  "));
}
