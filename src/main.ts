#!/usr/bin/env bun
// The one command-line entry of abuse-intel: the server, the jobs and the offline tools are commands of it.

import { AppError } from "./domain/errors";
import { VERSION } from "./version";
import type { Command } from "./cli/command";
import { serveCommand } from "./cli/serve";
import { userCommand } from "./cli/user";
import { keyCommand } from "./cli/key";
import { bouncerCommand } from "./cli/bouncer";
import { doctorCommand } from "./cli/doctor";
import { backupCommand, restoreCommand } from "./cli/backup";
import { importCommand } from "./cli/import";
import { allowCommand } from "./cli/allow";
import { feedCommand } from "./cli/feed";
import { geoCommand } from "./cli/geo";
import { jobsCommand } from "./cli/jobs";
import { snapshotCommand } from "./cli/snapshot";
import { checkCommand } from "./cli/check";
import { blocklistCommand } from "./cli/blocklist";
import { installLogOutput, takeLogFormat } from "./cli/log-output";
import type { LogFormat } from "./domain/log-line";
import { firewallCommand } from "./cli/firewall";

const commands: Command[] = [serveCommand, userCommand, keyCommand, importCommand, allowCommand, feedCommand, geoCommand, jobsCommand, snapshotCommand, checkCommand, blocklistCommand, bouncerCommand, firewallCommand, doctorCommand, backupCommand, restoreCommand];

function usage(): string {
  return [
    `abuse-intel ${VERSION}: abuse-intelligence IP reputation service`,
    "",
    "Usage: abuse-intel <command> [options]   (abuse-intel <command> --help for its options)",
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`),
    "",
    "  --version    print the version",
    "  --log-format text|json   log as text (default; levels for journald) or one JSON object per line [ABUSE_INTEL_LOG_FORMAT]",
  ].join("\n");
}

export async function main(args: string[]): Promise<number> {
  // Everything the executable creates (database, secrets, snapshots) holds hashes and secrets: owner only.
  process.umask(0o077);
  let argv: string[];
  let logFormat: LogFormat;
  try {
    ({ argv, format: logFormat } = takeLogFormat(args));
  } catch (error) {
    console.error(`abuse-intel: ${(error as Error).message}`);
    return 2;
  }
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-v") {
    console.log(VERSION);
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    console.error(`abuse-intel: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(command.help);
    return 0;
  }
  installLogOutput(logFormat, command.name);
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof AppError) {
      console.error(`abuse-intel ${name}: ${error.message}`);
      for (const d of error.details ?? []) console.error(`  ${d.field}: ${d.message}`);
      return 2;
    }
    console.error(`abuse-intel ${name}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  process.exit(code);
}
