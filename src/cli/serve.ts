// `abuse-intel serve`: the composition root of the server: config → store → services → HTTP and jobs.

import { serveEdge } from "./edge";
import { mkdirSync } from "node:fs";
import { OPTIONS, resolveConfig } from "../config";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { openStore, SERVER_BUSY_TIMEOUT_MS, type Store } from "../store/database";
import { startWalCheckpointer, type WalCheckpointer } from "../store/wal-checkpointer";
import { type Services } from "../services/services";
import { createServices } from "../app/create-services";
import { indexFilePath } from "../services/changes/persisted-index";
import { createSnapshotServices } from "../app/snapshot-services";
import { ensureInitialAdmin } from "../services/accounts/accounts";
import { createApp } from "../http/app";
import { listen, listeningUrl } from "../http/server";
import { type DnsblService, startDnsbl } from "../dns/dnsbl-listener";
import { parseArgs } from "./args";
import { claimDataDir, releaseDataDir } from "./data-dir-lock";
import { printedOutputIsKeptLog } from "./log-output";
import { notifyReady } from "./systemd-notify";
import { type VerifyResult, verifySnapshot } from "../services/snapshots/export";
import type { Command } from "./command";

const SERVE_FLAGS = OPTIONS.filter((o) => !o.boolean).map((o) => o.flag).concat("--schedule");
const SERVE_SWITCHES = OPTIONS.filter((o) => o.boolean).map((o) => o.flag);

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
    if (config.snapshot !== null) {
      // Checked whole before anything of it is served, as an edge checks what it pulls (about a second per million
      // addresses): a damaged file, or with --pubkey one that key did not sign, is refused.
      const check = verifySnapshotFile(config.snapshot, config.pubkey);
      if (check !== null) throw new AppError("bad_request", `${config.snapshot} is not served: ${check}`);
      services = await createSnapshotServices({ config, clock: systemClock });
    } else {
      try {
        mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
        claimDataDir(config.dataDir);
      } catch (error) {
        if (error instanceof AppError) throw error;
        throw new AppError("bad_request", `cannot use the data directory ${config.dataDir}: ${(error as Error).message}`);
      }
      let opened: Store | null = null;
      try {
        opened = openStore(config.dataDir, { sync: config.syncMode, busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS });
        services = await createServices({ config, clock: systemClock, store: opened, indexFile: indexFilePath(config.dataDir) });
        await ensureInitialAdmin(services, { ...config, printSecrets: !printedOutputIsKeptLog() });
      } catch (error) {
        opened?.close();
        releaseDataDir(config.dataDir);
        throw error;
      }
      // What building or reading the index left behind (rows, parsed addresses, read buffers) goes now, not at
      // some later collection: the resident size after start is what the host has to plan for.
      Bun.gc(true);
    }
    const store = services.store;
    /** Stops what started (the checkpointer once there is one), closes the store, gives the data directory back. */
    const closeDown = async (checkpointer: Promise<WalCheckpointer | null> = Promise.resolve(null)) => {
      await services.stop();
      await (await checkpointer)?.stop();
      store.close();
      if (config.snapshot === null) releaseDataDir(config.dataDir);
    };
    // The merged geo table answers lookups of addresses nobody reported: built before the server listens (50-100 ms),
    // not at the first such lookup nor just after /readyz, where it held the first requests (issue 29).
    services.enrichment.prepareOwnerRanges();
    const app = createApp(services);
    let server: ReturnType<typeof listen>;
    try {
      server = listen(services, app, { hostname: config.host, port: config.port });
    } catch (error) {
      await closeDown();
      throw new AppError("bad_request", `cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
    }
    // The DNS blocklist (contract 17), when --dns-port asks for it: a port in use stops the start, naming it.
    let dnsbl: DnsblService | null;
    try {
      dnsbl = await startDnsbl(config, systemClock, services);
    } catch (error) {
      server.stop(true);
      await closeDown();
      throw error;
    }
    // Checkpoints off the event loop: a commit never waits for the log to be copied into the database. Started
    // once the server listens (a worker takes tens of milliseconds to start); until then commits checkpoint as before.
    const checkpointer: Promise<WalCheckpointer | null> =
      config.snapshot !== null
        ? Promise.resolve(null)
        : startWalCheckpointer(store).catch((error) => {
            console.error(`background checkpoints are off (each commit checkpoints when it must): ${(error as Error).message}`);
            return null;
          });
    // The signals are handled before the line that says the server listens: a stop sent on seeing it is clean
    // (the index file and the last counts are written).
    const stopped = new Promise<void>((resolve) => {
      const shutdown = async () => {
        server.stop();
        dnsbl?.stop();
        await closeDown(checkpointer);
        resolve();
      };
      process.once("SIGINT", shutdown);
      process.once("SIGTERM", shutdown);
    });
    const from = config.snapshot !== null ? `read-only snapshot ${config.snapshot}` : `data in ${config.dataDir}`;
    if (dnsbl !== null) console.log(`abuse-intel answering the ${dnsbl.description}`);
    console.log(`abuse-intel listening on ${listeningUrl(server)} (${from})`);
    notifyReady(`listening on ${listeningUrl(server)}`);
    // The scheduled jobs start once the API answers (services.stop() stops them); a snapshot server runs none.
    if (config.snapshot === null) {
      services.scheduler.start();
      services.feeds.schedule.start();
    }

    await stopped;
    return 0;
  },
};

/** Why the snapshot `file` must not be served (damaged, or not signed by the key at `pubkeyPath`), or null. */
function verifySnapshotFile(file: string, pubkeyPath: string | null): string | null {
  let result: VerifyResult;
  try {
    result = verifySnapshot(file, pubkeyPath ?? undefined);
  } catch (error) {
    return (error as Error).message;
  }
  return result.ok ? null : result.problems.join("; ");
}
