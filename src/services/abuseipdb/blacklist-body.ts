// The body of `/api/v2/blacklist` (contract 13), written as bytes into chunks (ChunkWriter) from a BlacklistOrder,
// one chunk per pull of the response stream: no object or string per entry, and never the whole answer at once.
//
// - JSON, as JSON.stringify wrote it: `{"meta":{"generatedAt":"<time>"},"data":[{"ipAddress":"192.0.2.1",
//   "countryCode":"US"|null,"abuseConfidenceScore":100,"lastReportedAt":"<time>"|null},...]}`.
// - plaintext: one entry a line, no newline after the last (an empty list is an empty body).
// Times as AbuseIPDB writes them (`2026-11-21T08:00:00+00:00`); an entry is an address, or a listed network in
// CIDR form. Entries the country filters refuse are skipped and do not count toward the limit.

import type { ChunkWriter } from "../../domain/blocklist/chunk-writer";
import type { BlacklistOrder } from "./blacklist-order";
import { AbuseIpdbTimeWriter } from "./blacklist-time";
import { NO_COUNTRY } from "./country-keys";
import { confidenceOf } from "./wire";

export interface BlacklistBodyRequest {
  limit: number;
  /** Which countries are listed (`countryFilter`); null when not filtered. */
  countries: Uint8Array | null;
  plaintext: boolean;
  /** `meta.generatedAt`, already in AbuseIPDB's form. */
  generatedAt: string;
}

export interface BlacklistRenderer {
  /** Writes until `out` is full or the answer has ended; true once everything has been written. */
  fill(out: ChunkWriter): boolean;
}

export function blacklistRenderer(order: BlacklistOrder, request: BlacklistBodyRequest): BlacklistRenderer {
  const { selection } = order;
  const { score, lastSeen } = selection.details!;
  const { limit, countries, plaintext } = request;
  const words = new Uint32Array(4);
  const times = new AbuseIpdbTimeWriter();
  let begun = false;
  let written = 0;
  let bucketNumber = 0;
  let bucket: Uint32Array | null = null;
  let at = 0;

  const writeAddress = (w: ChunkWriter, i: number) => {
    if (i < selection.v4Count) {
      w.ipv4(selection.v4[i]);
      const prefix = selection.v4Prefix === null ? 32 : selection.v4Prefix[i];
      if (prefix !== 32) {
        w.byte(47); // "/"
        w.uint(prefix);
      }
      return;
    }
    const k = i - selection.v4Count;
    words.set(selection.v6.subarray(4 * k, 4 * k + 4));
    w.ipv6(words);
    const prefix = selection.v6Prefix === null ? 128 : selection.v6Prefix[k];
    if (prefix !== 128) {
      w.byte(47);
      w.uint(prefix);
    }
  };

  const writeJsonEntry = (w: ChunkWriter, i: number) => {
    w.ascii(written === 0 ? '{"ipAddress":"' : ',{"ipAddress":"');
    writeAddress(w, i);
    const country = order.country(i);
    if (country === NO_COUNTRY) w.ascii('","countryCode":null');
    else {
      w.ascii('","countryCode":"');
      w.byte(country >> 8);
      w.byte(country & 255);
      w.byte(34); // '"'
    }
    w.ascii(',"abuseConfidenceScore":');
    w.uint(confidenceOf(score[i]));
    w.ascii(',"lastReportedAt":');
    if (Number.isNaN(lastSeen[i])) w.ascii("null}");
    else {
      w.byte(34);
      times.write(w, lastSeen[i]);
      w.ascii('"}');
    }
  };

  /** The next entry to send, or -1 at the end of the list. */
  const nextEntry = (): number => {
    for (;;) {
      if (bucket === null) {
        if (bucketNumber === order.bucketCount) return -1;
        const score = bucketNumber++;
        if (countries !== null && !order.anyListed(score, countries)) continue;
        bucket = order.bucket(score);
        at = 0;
      }
      while (at < bucket.length) {
        const i = bucket[at++];
        if (countries === null || countries[order.country(i)] === 1) return i;
      }
      bucket = null;
    }
  };

  return {
    fill(w) {
      if (!begun) {
        begun = true;
        if (!plaintext) w.ascii(`{"meta":{"generatedAt":"${request.generatedAt}"},"data":[`);
      }
      while (!w.full) {
        const i = written < limit ? nextEntry() : -1;
        if (i < 0) {
          if (!plaintext) w.ascii("]}");
          return true;
        }
        if (plaintext) {
          if (written > 0) w.byte(10); // "\n"
          writeAddress(w, i);
        } else writeJsonEntry(w, i);
        written++;
      }
      return false;
    },
  };
}
