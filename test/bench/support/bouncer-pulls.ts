// A CrowdSec bouncer as the benchmarks see one: its startup pull of the decisions stream (the whole list, read to
// the end), then a delta pull every interval, each timed, until stopped.

export interface BouncerPulls {
  /** Stops pulling after the pull under way; the count and the slowest delta pull, in milliseconds. */
  stop(): Promise<{ pulls: number; slowestMs: number; failures: number }>;
}

/** The startup pull (`startup=true`), read to its end: its time in milliseconds and its size in bytes. */
export async function startupPull(url: string, key: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/decisions/stream?startup=true`, { headers: { "x-api-key": key } });
  if (res.status !== 200) throw new Error(`startup pull: ${res.status} ${await res.text()}`);
  const bytes = (await res.arrayBuffer()).byteLength;
  return { ms: performance.now() - started, bytes };
}

/** A delta pull (`GET /v1/decisions/stream?`) every `everyMs`, as Debian's bouncer sends after its first. */
export function pullEvery(url: string, key: string, everyMs: number): BouncerPulls {
  let stopped = false;
  let pulls = 0;
  let failures = 0;
  let slowestMs = 0;
  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      try {
        const res = await fetch(`${url}/v1/decisions/stream?`, { headers: { "x-api-key": key } });
        await res.arrayBuffer();
        if (res.status === 200) pulls++;
        else failures++;
      } catch {
        failures++;
      }
      const took = performance.now() - started;
      slowestMs = Math.max(slowestMs, took);
      if (!stopped) await Bun.sleep(Math.max(0, everyMs - took));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { pulls, slowestMs, failures };
    },
  };
}
