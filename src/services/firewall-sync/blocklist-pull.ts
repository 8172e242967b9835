// One pull of the appliance's blocklist for a firewall sync (contract 19): `GET /v1/ip/blocklist` in the nft or
// ipset format with `If-None-Match`, read as it arrives into a BlocklistBodyReader, the whole pull (connect to
// last byte) bounded by --timeout. A 304 costs nothing; anything but a complete list throws with the reason.

import { BlocklistBodyReader, type EntrySink, type PulledFormat } from "../../domain/firewall/blocklist-body";

export interface PullSettings {
  /** The appliance (a primary or an edge), without a trailing slash. */
  url: string;
  key: string;
  format: PulledFormat;
  /** `riskLevel` and `category` as given, or absent for the appliance's defaults. */
  riskLevel: string | null;
  categories: string | null;
  timeoutMs: number;
}

export type PullResult = { changed: false } | { changed: true; etag: string | null; entries: number; headersAfterMs: number };

/**
 * Pulls the list; entries go to `sink` as they arrive, and `afterChunk` is awaited after each piece of the
 * body (the ipset writer's back-pressure). Throws when the pull fails or the body is not a complete list.
 */
export async function pullBlocklist(settings: PullSettings, etag: string | null, sink: EntrySink, afterChunk: () => Promise<void>): Promise<PullResult> {
  const query = new URLSearchParams({ format: settings.format });
  if (settings.riskLevel !== null) query.set("riskLevel", settings.riskLevel);
  if (settings.categories !== null) query.set("category", settings.categories);
  const headers: Record<string, string> = { "x-api-key": settings.key };
  if (etag !== null) headers["if-none-match"] = etag;
  const signal = AbortSignal.timeout(settings.timeoutMs);
  const started = performance.now();
  try {
    const res = await fetch(`${settings.url}/v1/ip/blocklist?${query}`, { headers, signal, redirect: "follow" });
    const headersAfterMs = performance.now() - started;
    if (res.status === 304) return { changed: false };
    if (res.status !== 200) throw new Error(`the appliance answered ${res.status}: ${(await res.text()).slice(0, 200).replace(/\s+/g, " ")}`);
    if (res.body === null) throw new Error("the appliance answered 200 with no body");
    const reader = new BlocklistBodyReader(settings.format, sink);
    for await (const chunk of res.body) {
      reader.push(chunk);
      await afterChunk();
    }
    return { changed: true, etag: res.headers.get("etag"), entries: reader.end(), headersAfterMs };
  } catch (error) {
    if (signal.aborted) throw new Error(`the pull took longer than --timeout (${settings.timeoutMs / 1000} s)`);
    throw error;
  }
}
