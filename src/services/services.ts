// The services of one running instance, wired once by the composition root (src/cli/serve.ts) or by a test
// harness. Routes, CLI commands and jobs receive this object and call use cases on it; none of them builds
// its own singletons.

import type { Clock } from "../domain/clock";
import type { Config } from "../config";
import type { Store } from "../store/database";

export interface Services {
  config: Config;
  clock: Clock;
  store: Store;
  /** True once the database is open and the index built: what /readyz reports. */
  isReady(): boolean;
  /** Stops timers and background work; the caller closes the store. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  config: Config;
  clock: Clock;
  store: Store;
}

export async function createServices(options: ServiceOptions): Promise<Services> {
  const { config, clock, store } = options;
  const stoppers: (() => void | Promise<void>)[] = [];
  return {
    config,
    clock,
    store,
    isReady: () => true,
    stop: async () => {
      for (const stop of stoppers.reverse()) await stop();
    },
  };
}
