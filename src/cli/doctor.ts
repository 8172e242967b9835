// `abuse-intel doctor`: checks a data directory's database without changing it, prints what it found, and exits
// 0 when everything is in order, 1 otherwise. Safe while the server runs (it only reads).

import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { resolveConfig, scoringParametersOf } from "../config";
import { AppError } from "../domain/errors";
import { databaseFindings, fileFindings, type Finding } from "../services/doctor/doctor";
import type { Listing } from "../domain/feeds";
import type { Ip } from "../domain/ip";
import { ListedNetworks } from "../services/feeds/listed-networks";
import { databasePath, type Store } from "../store/database";
import { FeedTables } from "../store/feeds";
import { hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command, SCORING_FLAGS, SCORING_HELP } from "./command";

const HELP = [
  "Usage: abuse-intel doctor [--json] [--data-dir DIR] [scoring options]",
  "",
  "Checks the database of a data directory without changing it: the file's header and size, the tables,",
  "SQLite's integrity_check and foreign keys, and every address row the index is built from against its",
  "reports (its score and when it is due to be rescored). Prints each check; exits 0 when all pass, 1 when one fails. Give the scoring options the server",
  "runs with, or its rows are compared with scores under the defaults.",
  DATA_DIR_HELP,
  SCORING_HELP,
].join("\n");

export const doctorCommand: Command = {
  name: "doctor",
  summary: "check a data directory's database without changing it",
  help: HELP,
  async run(argv) {
    const args = parseArgs(argv, { values: ["--data-dir", ...SCORING_FLAGS], switches: ["--json"] });
    if (args.positionals.length > 0) throw new AppError("bad_request", `doctor takes no arguments (got "${args.positionals[0]}")`);
    const config = resolveConfig(args.flags);
    const path = databasePath(config.dataDir);
    if (!existsSync(path)) throw new AppError("not_found", `no database at ${path}`);
    const findings: Finding[] = fileFindings(path);
    if (findings[0].ok) {
      let sqlite: Database | null = null;
      try {
        sqlite = new Database(path, { readonly: true });
        const store = { sqlite, path, close: () => sqlite?.close() } as unknown as Store;
        // Listings count in scores (contract 12): the rows of listed addresses are checked with them.
        let listingsAround: ((ip: Ip) => Listing[]) | undefined;
        try {
          const tables = new FeedTables(store);
          const listed = ListedNetworks.load(tables.list(), tables.everyEntry());
          listingsAround = (ip) => listed.listingsAround(ip);
        } catch {
          // No feed tables: the tables check reports it.
        }
        findings.push(...databaseFindings(store, scoringParametersOf(config), listingsAround));
      } catch (error) {
        findings.push({ check: "open", ok: false, details: [(error as Error).message] });
      } finally {
        sqlite?.close();
      }
    }
    if (hasSwitch(args, "--json")) console.log(JSON.stringify({ database: path, ok: findings.every((f) => f.ok), findings }, null, 2));
    else {
      console.log(`abuse-intel doctor: ${path}`);
      for (const f of findings) {
        console.log(`${f.ok ? "ok  " : "FAIL"}  ${f.check}`);
        for (const d of f.details) console.log(`      ${d}`);
      }
    }
    return findings.every((f) => f.ok) ? 0 : 1;
  },
};
