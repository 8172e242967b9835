// `abuse-intel key create|list|revoke`: API keys on the local data directory. A key made here works against a
// server running on the same directory within 2 seconds; a revoked one stops working as fast.

import { resolveConfig } from "../config";
import { isoTime, systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { Accounts } from "../services/accounts/accounts";
import { ApiKeys, apiKeyView, parseKeyName } from "../services/accounts/api-keys";
import { openStore } from "../store/database";
import { flag, hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command } from "./command";
import { findUser, printColumns, required } from "./user";

const HELP = [
  "Usage: abuse-intel key <create|list|revoke> [options]",
  "",
  "  key create --email E --name N",
  "      Creates an API key for the account and prints it once: the key alone on stdout, the explanation on",
  "      stderr (so KEY=$(abuse-intel key create ...) works). Only its SHA-256 hash is stored.",
  "  key list --email E [--json]",
  "      Lists the account's keys, revoked ones included (never the keys themselves).",
  "  key revoke ID",
  "      Revokes a key by its id (from key list); requests with it get 401.",
  "",
  DATA_DIR_HELP,
].join("\n");

export const keyCommand: Command = {
  name: "key",
  summary: "manage API keys (create, list, revoke)",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    const args = parseArgs(rest, { values: ["--data-dir", "--email", "--name"], switches: ["--json"] });
    const config = resolveConfig(args.flags);
    const expectPositionals = sub === "revoke" ? 1 : 0;
    if (sub !== undefined && args.positionals.length !== expectPositionals) {
      throw new AppError("bad_request", sub === "revoke" ? "key revoke takes one key id" : `unexpected argument "${args.positionals[0]}"`);
    }
    const store = openStore(config.dataDir);
    try {
      const accounts = new Accounts(store, systemClock);
      const apiKeys = new ApiKeys(store, systemClock);
      switch (sub) {
        case "create": {
          const user = findUser(accounts, required(flag(args, "--email"), "--email"));
          const name = parseKeyName(required(flag(args, "--name"), "--name"));
          const { record, key } = apiKeys.create(user.id, name);
          console.error(`Created API key ${record.id} "${record.name}" for ${user.email}; it is shown only this once:`);
          if (user.disabled) console.error(`Note: ${user.email} is disabled; the key works once the account is enabled.`);
          console.log(key);
          return 0;
        }
        case "list": {
          const user = findUser(accounts, required(flag(args, "--email"), "--email"));
          const keys = apiKeys.listForUser(user.id, { includeRevoked: true });
          if (hasSwitch(args, "--json")) console.log(JSON.stringify(keys.map(apiKeyView), null, 2));
          else if (keys.length === 0) console.error(`${user.email} has no API keys`);
          else {
            printColumns([
              ["ID", "NAME", "PREFIX", "CREATED", "LAST USED", "STATUS"],
              ...keys.map((k) => [String(k.id), k.name, k.prefix, isoTime(k.createdAt), k.lastUsedAt === null ? "never" : isoTime(k.lastUsedAt), k.revokedAt === null ? "active" : `revoked ${isoTime(k.revokedAt)}`]),
            ]);
          }
          return 0;
        }
        case "revoke": {
          const raw = args.positionals[0];
          if (!/^[1-9]\d{0,15}$/.test(raw)) throw new AppError("bad_request", `not a key id: "${raw}"`);
          const record = apiKeys.revoke(Number(raw));
          console.log(`Revoked API key ${record.id} "${record.name}" (${record.prefix}…)`);
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
