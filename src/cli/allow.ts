// `abuse-intel allow add|list|remove`: the allowlist on the local data directory (contract section 6). A
// running server on the same directory picks the change up within 2 seconds.

import { resolveConfig } from "../config";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { createAllowlist } from "../services/allowlist/allowlist";
import { openStore } from "../store/database";
import { flag, hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command } from "./command";
import { printColumns } from "./user";

const HELP = [
  "Usage: abuse-intel allow <add|list|remove> [options]",
  "",
  "  allow add CIDR [--note TEXT]   never list this address or network on a blocklist",
  "  allow list [--json]            the allowlisted networks",
  "  allow remove CIDR|ID           take a network off the allowlist",
  "",
  "Allowlisted addresses keep their reports and scores and show isAllowlisted: true in lookups.",
  DATA_DIR_HELP,
].join("\n");

export const allowCommand: Command = {
  name: "allow",
  summary: "manage the allowlist (add, list, remove)",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    const args = parseArgs(rest, { values: ["--data-dir", "--note"], switches: ["--json"] });
    const config = resolveConfig(args.flags);
    const wanted = sub === "list" ? 0 : 1;
    if (sub !== "add" && sub !== "list" && sub !== "remove") throw new AppError("bad_request", `allow takes add, list or remove\n\n${HELP}`);
    if (args.positionals.length !== wanted) throw new AppError("bad_request", `allow ${sub} takes ${wanted === 0 ? "no arguments" : "one CIDR"}`);
    const store = openStore(config.dataDir);
    try {
      const allowlist = createAllowlist(store, systemClock);
      if (sub === "add") {
        const entry = allowlist.add(args.positionals[0], flag(args, "--note") ?? "", null);
        console.log(`allowlisted ${entry.cidr} (id ${entry.id})`);
      } else if (sub === "remove") {
        if (!allowlist.remove(args.positionals[0])) throw new AppError("not_found", `${args.positionals[0]} is not on the allowlist`);
        console.log(`removed ${args.positionals[0]} from the allowlist`);
      } else {
        const entries = allowlist.list();
        if (hasSwitch(args, "--json")) console.log(JSON.stringify(entries, null, 2));
        else if (entries.length === 0) console.error("the allowlist is empty");
        else printColumns([["ID", "CIDR", "CREATED", "NOTE"], ...entries.map((e) => [e.id, e.cidr, e.createdAt, e.note])]);
      }
      return 0;
    } finally {
      store.close();
    }
  },
};
