// `abuse-intel serve`: the composition root of the server: config → store → services → HTTP and jobs.

import { serveEdge } from "./edge";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { OPTIONS, resolveConfig } from "../config";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { openStore, SERVER_BUSY_TIMEOUT_MS } from "../store/database";
import { startWalCheckpointer, type WalCheckpointer } from "../store/wal-checkpointer";
import { type Services } from "../services/services";
import { createServices } from "../app/create-services";
import { createSnapshotServices } from "../app/snapshot-services";
import { ensureInitialAdmin } from "../services/accounts/accounts";
import { createApp } from "../http/app";
import { listen } from "../http/server";
import { parseArgs } from "./args";
import type { Command } from "./command";

const SERVE_FLAGS = OPTIONS.filter((o) => !o.boolean).map((o) => o.flag).concat("--schedule");
const SERVE_SWITCHES = OPTIONS.filter((o) => o.boolean).map((o) => o.flag);

/** The file a server writes its pid to while it serves a data directory (restore refuses while it lives). */
export const SERVER_PID_FILE = "serve.pid";

/** The pid of a server running on `dataDir`, or null (no pid file, or its process is gone). */
export function runningServerPid(dataDir: string): number | null {
  const path = join(dataDir, SERVER_PID_FILE);
  if (!existsSync(path)) return null;
  const pid = Number(readFileSync(path, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

export const serveCommand: Command = {
  name: "serve",
  summary: "run the HTTP API and the scheduled jobs",
  help: [
    "Usage: abuse-intel serve [options]",
    "",
    "Serves the API (default 0.0.0.0:8080) with data in ./data. Options beat ABUSE_INTEL_* variables:",
    ...OPTIONS.map((o) => `  ${(o.flag + (o.boolean ? "" : " VALUE")).padEnd(22)} ${o.help} [${o.env}]`),
    `  ${"--schedule NAME=CRON".padEnd(22)} schedule of a job (repeatable) [ABUSE_INTEL_SCHEDULE_<NAME>]`,
  ].join("\n"),
  async run(argv) {
    const args = parseArgs(argv, { values: SERVE_FLAGS, switches: SERVE_SWITCHES });
    if (args.positionals.length > 0) throw new AppError("bad_request", `serve takes no arguments, got "${args.positionals[0]}"`);
    const config = resolveConfig(args.flags);
    // --follow URL: a read-only edge that serves its primary's signed snapshots.
    if (config.follow !== null) return serveEdge(config);
    // --snapshot FILE: the read-only composition over a snapshot; the data directory is not touched.
    let services: Services;
    let checkpointer: WalCheckpointer | null = null;
    if (config.snapshot !== null) {
      services = await createSnapshotServices({ config, clock: systemClock });
    } else {
      services = await createServices({ config, clock: systemClock, store: openStore(config.dataDir, { sync: config.syncMode, busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS }) });
      await ensureInitialAdmin(services, config);
      // Checkpoints off the event loop: a commit never waits for the log to be copied into the database.
      checkpointer = await startWalCheckpointer(services.store).catch((error) => {
        console.error(`background checkpoints are off (each commit checkpoints when it must): ${(error as Error).message}`);
        return null;
      });
      writeFileSync(join(config.dataDir, SERVER_PID_FILE), `${process.pid}\n`, { mode: 0o600 });
    }
    const store = services.store;
    const app = createApp(services);
    const server = listen(services, app, { hostname: config.host, port: config.port });
    const from = config.snapshot !== null ? `read-only snapshot ${config.snapshot}` : `data in ${config.dataDir}`;
    console.log(`abuse-intel listening on http://${server.hostname}:${server.port} (${from})`);
    // The scheduled jobs start once the API answers (services.stop() stops them); a snapshot server runs none.
    if (config.snapshot === null) {
      services.scheduler.start();
      services.feeds.schedule.start();
    }

    await new Promise<void>((resolve) => {
      const shutdown = async () => {
        server.stop();
        await services.stop();
        await checkpointer?.stop();
        store.close();
        if (config.snapshot === null) rmSync(join(config.dataDir, SERVER_PID_FILE), { force: true });
        resolve();
      };
      process.once("SIGINT", shutdown);
      process.once("SIGTERM", shutdown);
    });
    return 0;
  },
};
