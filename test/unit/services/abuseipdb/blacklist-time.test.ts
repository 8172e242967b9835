// The blacklist's times written as bytes are AbuseIPDB's form, as `abuseIpdbTime` writes it as a string.

import { expect, test } from "bun:test";
import { ChunkWriter, chunksToString } from "../../../../src/domain/blocklist/chunk-writer";
import { AbuseIpdbTimeWriter, writeAbuseIpdbTime } from "../../../../src/services/abuseipdb/blacklist-time";
import { abuseIpdbTime } from "../../../../src/services/abuseipdb/wire";

test("every time reads as abuseIpdbTime writes it, fractions cut, years 0000-9999 and beyond", () => {
  const times = [
    0, 999, 1000, -1, -999, -1001,
    Date.parse("2026-11-21T08:00:00.999Z"), Date.parse("2024-02-29T23:59:59.5Z"), Date.parse("2100-03-01T00:00:00Z"),
    Date.parse("0000-01-01T00:00:00Z"), Date.parse("0000-01-01T00:00:00Z") - 1, Date.parse("9999-12-31T23:59:59.999Z"),
    Date.parse("+010000-01-01T00:00:00Z"), 8.64e15, -8.64e15, 1_800_000_000_123.5,
  ];
  for (let k = 0; k < 2000; k++) times.push(Math.floor(Math.random() * 2 ** 42) - 2 ** 41);
  for (const ms of times) {
    const w = new ChunkWriter(64);
    writeAbuseIpdbTime(w, ms);
    expect([ms, chunksToString([w.take()])]).toEqual([ms, abuseIpdbTime(ms)]);
  }
});

test("a run of times, mostly of the same day as the one before, reads as abuseIpdbTime writes each", () => {
  const times: number[] = [];
  let t = Date.parse("2026-11-21T23:59:59.999Z");
  for (let k = 0; k < 5000; k++) {
    t -= Math.floor(Math.random() * 40_000_000);
    times.push(t, t, t - 1);
    if (k % 700 === 0) times.push(Date.parse("+010000-01-01T00:00:00Z") + t, -62_167_219_200_001, t);
  }
  const w = new ChunkWriter(1024);
  const writer = new AbuseIpdbTimeWriter();
  for (const ms of times) {
    writer.write(w, ms);
    expect([ms, chunksToString([w.take()])]).toEqual([ms, abuseIpdbTime(ms)]);
  }
});
