// Builds a whole instance for tests: a real SQLite file in a temporary directory, the real services with a
// manual clock, and the listener production serves with on a real port of 127.0.0.1, which `call` sends to.

import { listen } from "../../src/http/server";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig, type Config } from "../../src/config";
import { ManualClock } from "../../src/domain/clock";
import { openStore, type Store } from "../../src/store/database";
import { type Services } from "../../src/services/services";
import { createServices } from "../../src/app/create-services";
import { createApp, type App } from "../../src/http/app";

export interface Harness {
  dataDir: string;
  clock: ManualClock;
  store: Store;
  services: Services;
  app: App;
  /** `http://127.0.0.1:PORT` of the harness's own listener. */
  url: string;
  /** Sends a request to the listener: `call("GET", "/v1/...", { headers, json, body })`. */
  call(method: string, path: string, init?: CallInit): Promise<Response>;
  close(): Promise<void>;
  /**
   * A restart: stops the services and closes the store (keeping the data directory), then opens a new
   * harness on the same directory with the same clock and configuration. The new one owns the directory.
   */
  reopen(): Promise<Harness>;
}

export interface HarnessOptions {
  /** Use this data directory instead of a new temporary one; close() then leaves it in place. */
  dataDir?: string;
  /** Share a clock (e.g. across a reopen). */
  clock?: ManualClock;
  /** Delete the data directory on close (default: only when the harness made it). */
  ownsDataDir?: boolean;
}

export interface CallInit {
  headers?: Record<string, string>;
  json?: unknown;
  body?: RequestInit["body"];
}

export async function createHarness(overrides: Partial<Config> = {}, options: HarnessOptions = {}): Promise<Harness> {
  const ownsDataDir = options.ownsDataDir ?? options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "abuse-intel-test-"));
  const config: Config = { ...defaultConfig(), dataDir, jwtSecret: "test-secret-test-secret-test-secret-0123", syncMode: "normal", ...overrides };
  const clock = options.clock ?? new ManualClock();
  const store = openStore(dataDir, { sync: config.syncMode });
  const services = await createServices({ config, clock, store });
  const app = createApp(services);
  // Requests go through the listener production serves with (Bun's router for the hot and compatibility
  // routes, the Elysia app for the rest), on a real port: no test passes on a path production never takes.
  const server = listen(services, app, { hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    dataDir,
    clock,
    store,
    services,
    app,
    call(method, path, init = {}) {
      const headers: Record<string, string> = { ...init.headers };
      let body = init.body;
      if (init.json !== undefined) {
        body = JSON.stringify(init.json);
        headers["content-type"] ??= "application/json";
      }
      return fetch(`${url}${path}`, { method, headers, body });
    },
    url,
    async close() {
      server.stop(true);
      await services.stop();
      store.close();
      if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
    },
    async reopen() {
      server.stop(true);
      await services.stop();
      store.close();
      return createHarness(overrides, { dataDir, clock, ownsDataDir });
    },
  };
}

/** The JSON body of a response, untyped: tests assert on its exact shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const bodyOf = async (res: Response): Promise<any> => res.json();
