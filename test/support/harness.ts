// Builds a whole instance for tests: a real SQLite file in a temporary directory, the real services with a
// manual clock, and the real Elysia app, called through app.handle(new Request(...)).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig, type Config } from "../../src/config";
import { ManualClock } from "../../src/domain/clock";
import { openStore, type Store } from "../../src/store/database";
import { createServices, type Services } from "../../src/services/services";
import { createApp, type App } from "../../src/http/app";

export interface Harness {
  dataDir: string;
  clock: ManualClock;
  store: Store;
  services: Services;
  app: App;
  /** Sends a request to the app: `call("GET", "/v1/...", { headers, json, body })`. */
  call(method: string, path: string, init?: CallInit): Promise<Response>;
  close(): Promise<void>;
}

export interface CallInit {
  headers?: Record<string, string>;
  json?: unknown;
  body?: RequestInit["body"];
}

export async function createHarness(overrides: Partial<Config> = {}): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "abuse-intel-test-"));
  const config: Config = { ...defaultConfig(), dataDir, jwtSecret: "test-secret-test-secret-test-secret-0123", syncMode: "normal", ...overrides };
  const clock = new ManualClock();
  const store = openStore(dataDir);
  const services = await createServices({ config, clock, store });
  const app = createApp(services);
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
      return app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
    },
    async close() {
      await services.stop();
      store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The JSON body of a response, untyped: tests assert on its exact shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const bodyOf = async (res: Response): Promise<any> => res.json();
