import { describe, expect, test } from "bun:test";
import { LAG_BUCKETS, LAG_WINDOW_SECONDS, LagRecorder } from "../../../../src/services/metrics/event-loop-lag";

describe("event-loop lag recorder (issue 29)", () => {
  test("the largest delay of the last minute: older seconds drop out, a smaller later one does not hide it", () => {
    const lag = new LagRecorder();
    expect(lag.largestRecent(0)).toBe(0);
    lag.record(0.002, 1_000);
    lag.record(0.8, 5_500);
    lag.record(0.001, 5_900);
    lag.record(0.003, 30_000);
    expect(lag.largestRecent(30_000)).toBe(0.8);
    // 5.5 s is still within the minute up to 64.9 s, gone at 65 s.
    expect(lag.largestRecent(64_900)).toBe(0.8);
    expect(lag.largestRecent(65_000)).toBe(0.003);
    // A slot reused a minute later starts again from its new second.
    lag.record(0.004, 5_000 + LAG_WINDOW_SECONDS * 1000);
    expect(lag.largestRecent(5_000 + LAG_WINDOW_SECONDS * 1000)).toBe(0.004);
    expect(lag.largestRecent(200_000)).toBe(0);
  });

  test("every delay goes into the histogram's bucket, sum and count", () => {
    const lag = new LagRecorder();
    for (const s of [0, 0.001, 0.015, 0.02, 0.5, 9]) lag.record(s, 0);
    expect(lag.count).toBe(6);
    expect(lag.sum).toBeCloseTo(9.536, 9);
    const at = (bound: number) => lag.buckets[LAG_BUCKETS.indexOf(bound)];
    expect(at(0.001)).toBe(2); // le is inclusive: 0 and 0.001
    expect(at(0.02)).toBe(2); // 0.015 and 0.02
    expect(at(0.5)).toBe(1);
    expect(lag.buckets[LAG_BUCKETS.length]).toBe(1); // 9 s, above the highest bound
    lag.record(Number.NaN, 0);
    expect(lag.sum).toBeCloseTo(9.536, 9);
  });
});
