// AbuseIPDB's times (`2026-11-21T08:00:00+00:00`, as `abuseIpdbTime` writes them) written as bytes into a chunk:
// the blacklist writes one per entry, and entries come newest first, so most are of the same day as the one before.

import type { ChunkWriter } from "../../domain/blocklist/chunk-writer";
import { abuseIpdbTime } from "./wire";

/** The first and past-the-last millisecond of years 0000-9999, which ChunkWriter.isoTime writes itself. */
const FIRST_MS = Date.parse("0000-01-01T00:00:00Z");
const PAST_LAST_MS = Date.parse("+010000-01-01T00:00:00Z");
const DAY_MS = 86_400_000;
/** `+00:00` */
const ZONE = Uint8Array.from("+00:00", (c) => c.charCodeAt(0));

/** `abuseIpdbTime(ms)` as bytes: ChunkWriter's ISO time, without the fraction, with `+00:00`. */
export function writeAbuseIpdbTime(w: ChunkWriter, ms: number): void {
  if (!(ms >= FIRST_MS && ms < PAST_LAST_MS)) {
    w.ascii(abuseIpdbTime(ms));
    return;
  }
  w.isoTime(ms);
  w.pos -= 5; // ".mmmZ"
  w.ascii("+00:00");
}

/** Writes times, copying the date from the time before when it is the same day (entries come newest first). */
export class AbuseIpdbTimeWriter {
  private day = Number.NaN;
  /** `YYYY-MM-DDT` of `day`. */
  private readonly date = new Uint8Array(11);

  write(w: ChunkWriter, ms: number): void {
    const day = Math.floor(ms / DAY_MS);
    if (day !== this.day) {
      const start = w.pos;
      writeAbuseIpdbTime(w, ms);
      const inRange = w.pos - start === 25;
      this.day = inRange ? day : Number.NaN;
      if (inRange) this.date.set(w.buf.subarray(start, start + 11));
      return;
    }
    w.ensure(25);
    const b = w.buf;
    let p = w.pos;
    for (let k = 0; k < 11; k++) b[p++] = this.date[k];
    const seconds = Math.floor((ms - day * DAY_MS) / 1000);
    const h = Math.floor(seconds / 3600);
    const m = Math.floor((seconds - h * 3600) / 60);
    const s = seconds - h * 3600 - m * 60;
    b[p++] = 48 + Math.floor(h / 10);
    b[p++] = 48 + (h % 10);
    b[p++] = 58; // ":"
    b[p++] = 48 + Math.floor(m / 10);
    b[p++] = 48 + (m % 10);
    b[p++] = 58;
    b[p++] = 48 + Math.floor(s / 10);
    b[p++] = 48 + (s % 10);
    for (let k = 0; k < 6; k++) b[p++] = ZONE[k];
    w.pos = p;
  }
}
