// `abuse-intel serve --follow URL`: an edge (contract sections 16 and 18). It answers from the last good signed
// snapshot of its primary, swapping a new one in with `server.reload` so no request is dropped; until the first
// one arrives, lookups answer 503 and /readyz is not 200. With --forward-key it takes reports, queues them durably
// in <data-dir>/edge/forward-queue.sqlite and forwards them to the primary (also before its first snapshot);
// without it, writes answer 503 read_only. Its own clients use the keys given with --api-key, as with
// `serve --snapshot`. Its bouncers' decision cursors outlive every swap and restart, in
// <data-dir>/edge/bouncer-cursors.sqlite. It claims its data directory as a server does (one process a directory:
// two edges forwarding one queue would send every report twice).

import { mkdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../config";
import type { Ip } from "../domain/ip";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { createSnapshotServices, StaticKeyCredentials } from "../app/snapshot-services";
import { edgeReportRoutes } from "../http/edge-reports";
import { EdgeIntake } from "../services/edge/forward-intake";
import { Forwarder } from "../services/edge/forwarder";
import type { ForwardingGauges } from "../services/metrics/metrics";
import { confidenceOf } from "../services/abuseipdb/wire";
import { ForwardQueueFile } from "../store/forward-queue";
import { claimDataDir, releaseDataDir } from "./data-dir-lock";
import { createApp } from "../http/app";
import { errorResponse } from "../http/errors";
import { readOnlyRefusal } from "../http/read-only";
import { handlerOptions, listeningUrl } from "../http/server";
import { notifyReady } from "./systemd-notify";
import { type CursorKeeper, MemoryCursors } from "../services/bouncers/bouncers";
import { SnapshotFollower } from "../services/edge/follower";
import type { Services } from "../services/services";
import type { VerifyResult } from "../services/snapshots/export";
import { readPublicKey } from "../services/snapshots/signing";
import { EdgeCursorFile } from "../store/edge-cursors";
import { selfCommand } from "./self-command";
import { type DnsblService, startDnsbl } from "../dns/dnsbl-listener";
import { nextTurn } from "../services/event-loop-turns";

/** How long a replaced snapshot stays open for requests that were reading it. */
const RETIRE_AFTER_MS = 10_000;

export async function serveEdge(config: Config): Promise<number> {
  const url = config.follow as string;
  if (config.followKey === null) throw new AppError("bad_request", "serve --follow needs --follow-key KEY (ABUSE_INTEL_FOLLOW_KEY): an admin's API key on the primary");
  if (config.pubkey === null) throw new AppError("bad_request", "serve --follow needs --pubkey FILE: the primary's public key (snapshot keygen); only snapshots it verifies are served");
  if (config.apiKeys.filter((k) => k.length > 0).length === 0) {
    throw new AppError("bad_request", "serve --follow needs at least one API key for the edge's own clients: --api-key KEY (repeatable) or ABUSE_INTEL_API_KEYS");
  }
  const publicKey = readPublicKey(config.pubkey);
  const directory = join(config.dataDir, "edge");
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  claimDataDir(config.dataDir);
  const cursors = openCursors(join(directory, "bouncer-cursors.sqlite"));
  let current: Services | null = null;
  const forwarding = config.forwardKey === null ? null : startForwarding(config, url, directory, (ip) => (current === null ? 0 : confidenceOf(current.reputation.scoreOf(ip))));

  const readyz = () => {
    const { ready, body } = follower.readiness();
    return Response.json(forwarding === null ? body : { ...body, ...forwarding.readiness() }, { status: ready ? 200 : 503 });
  };
  const edgeRoutes = { "/readyz": readyz, "/healthz": () => Response.json({ success: true, status: "ok" }), ...(forwarding?.routes ?? {}) };
  const waiting = (request: Request) =>
    readOnlyRefusal(request) ?? errorResponse(new AppError("busy", `This edge has no snapshot from its primary (${url}) yet; see /readyz`), { "retry-after": "5" });

  const server = Bun.serve({ hostname: config.host, port: config.port, routes: edgeRoutes, fetch: waiting });
  // The DNS blocklist answers SERVFAIL until the first snapshot, then from each snapshot served.
  let dnsbl: DnsblService | null;
  try {
    dnsbl = await startDnsbl(config, systemClock, null);
  } catch (error) {
    server.stop(true);
    cursors.close?.();
    throw error;
  }
  const follower: SnapshotFollower = new SnapshotFollower({
    url,
    key: config.followKey,
    publicKey,
    directory,
    clock: systemClock,
    log: (line) => console.error(line),
    // A million addresses take a second or more to verify: in a child process, so lookups go on meanwhile.
    async verify(path) {
      const proc = Bun.spawn(selfCommand(["snapshot", "verify", path, "--pubkey", config.pubkey as string, "--json"]), { stdout: "pipe", stderr: "ignore" });
      const [text] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      try {
        return JSON.parse(text) as VerifyResult;
      } catch {
        return { ok: false, problems: [`the verification did not run (${text.slice(0, 200)})`], recordedSha256: null, computedSha256: null, signed: false, signatureValid: null, signatureKeyId: null };
      }
    },
    async onSnapshot(path) {
      const next = await createSnapshotServices({
        config: { ...config, snapshot: path },
        clock: systemClock,
        bouncerCursors: cursors,
        forwarding: forwarding?.gauges,
        // The same range tables (the usual case): their merged geo table is not built again (50-250 ms whole).
        previousEnrichment: current?.enrichment,
      });
      // Built before the swap, so no lookup after it waits for the merged geo table; a turn between each piece of
      // the swap's work lets the requests of the snapshot still served through (issue 29).
      await nextTurn();
      next.enrichment.prepareOwnerRanges();
      await nextTurn();
      const app = createApp(next);
      await nextTurn();
      // Elysia composes its handler on the first request it answers: here, not while a client waits.
      void app.fetch;
      await nextTurn();
      server.reload({ ...handlerOptions(next, app, edgeRoutes) });
      dnsbl?.use(next);
      const old = current;
      current = next;
      if (old !== null) {
        // Its file may be unlinked before it is closed (swaps less than RETIRE_AFTER_MS apart), and the last close
        // of an unlinked file frees its blocks: 70-80 ms for ~200 MB here. A handle of our own, closed after the
        // store on the thread pool, makes that last close happen off the event loop.
        const held = old.config.snapshot === null ? null : await open(old.config.snapshot, "r").catch(() => null);
        setTimeout(() => {
          void old.stop();
          old.store.close();
          void held?.close().catch(() => {});
        }, RETIRE_AFTER_MS).unref?.();
      }
    },
  });
  if (dnsbl !== null) console.log(`abuse-intel answering the ${dnsbl.description}`);
  console.log(`abuse-intel listening on ${listeningUrl(server)} (edge following ${url})`);
  notifyReady(`listening on ${listeningUrl(server)}, following ${url}`);
  if (await follower.resumeFromDisk()) console.error(`edge: serving the snapshot kept from before (made ${follower.state.snapshotCreatedAt}) until the next pull`);
  follower.start(config.followEverySeconds * 1000);
  forwarding?.forwarder.start();

  await new Promise<void>((resolve) => {
    const shutdown = async () => {
      follower.stop();
      server.stop();
      dnsbl?.stop();
      if (current !== null) {
        await current.stop();
        current.store.close();
      }
      cursors.close?.();
      await forwarding?.close();
      releaseDataDir(config.dataDir);
      resolve();
    };
    process.once("SIGINT", shutdown);
    process.once("SIGTERM", shutdown);
  });
  return 0;
}

/** The cursors' file; kept in memory when it cannot be opened: lookups matter more than a bouncer's cursor. */
function openCursors(path: string): CursorKeeper {
  try {
    return new EdgeCursorFile(path);
  } catch (error) {
    console.error(`edge: bouncers' cursors are kept in memory only (${path}: ${(error as Error).message})`);
    return new MemoryCursors();
  }
}

/** How many refused reports /readyz lists. */
const REFUSED_SHOWN = 5;

/** The queue, its intake and routes, and the forwarder of an edge started with --forward-key. */
function startForwarding(config: Config, url: string, directory: string, confidence: (ip: Ip) => number) {
  const queue = new ForwardQueueFile(join(directory, "forward-queue.sqlite"));
  const forwarder: Forwarder = new Forwarder({
    queue,
    url,
    key: config.forwardKey as string,
    clock: systemClock,
    onSettled: (n) => intake.forwarded(n),
    log: (line) => console.error(line),
  });
  const intake = new EdgeIntake({
    queue,
    clock: systemClock,
    duplicateWindowMs: config.duplicateWindowMs,
    queueMax: config.forwardQueueMax,
    onQueued: () => forwarder.nudge(),
  });
  const routes = edgeReportRoutes({
    intake,
    credentials: new StaticKeyCredentials(config.apiKeys.filter((k) => k.length > 0)),
    retentionDays: config.retentionDays,
    now: () => systemClock.now(),
    confidenceOf: confidence,
  });
  const gauges: ForwardingGauges = {
    queued: () => intake.queuedCount,
    forwardedTotal: () => forwarder.status.forwardedTotal,
    refusedTotal: () => forwarder.status.refusedTotal,
  };
  if (intake.queuedCount > 0) console.error(`edge: ${intake.queuedCount} reports queued from before are forwarded to ${url}`);
  return {
    routes,
    gauges,
    forwarder,
    readiness: () => ({
      forwardQueue: intake.queuedCount,
      lastForwardError: forwarder.status.lastForwardError,
      forwardRefused: queue.lastRefused(REFUSED_SHOWN).map((r) => ({ ...r, refusedAt: new Date(r.refusedAt).toISOString() })),
    }),
    async close() {
      await forwarder.stop();
      intake.flush();
      queue.close();
    },
  };
}
