// How long the event loop was held: a timer a few milliseconds apart notes how late each of its ticks came. Every
// request waits behind whatever holds the loop, so the largest delay is the stall a client saw (issue 29).

/** Histogram bounds in seconds: a healthy loop is late by a millisecond or two; 20 ms is the target's bound. */
export const LAG_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The timer's period: cheap (a few hundred wake-ups a second) and short enough to see a 20 ms stall. */
export const LAG_TICK_MS = 5;

/** The gauge reports the largest delay within this many seconds. */
export const LAG_WINDOW_SECONDS = 60;

/** Delays by the second they were seen in, so the largest of the last minute is read without keeping each one. */
export class LagRecorder {
  /** Per bucket, not cumulative; the last slot is above the highest bound. */
  readonly buckets = new Float64Array(LAG_BUCKETS.length + 1);
  sum = 0;
  count = 0;
  private readonly largestOfSecond = new Float64Array(LAG_WINDOW_SECONDS);
  private readonly secondOfSlot = new Float64Array(LAG_WINDOW_SECONDS).fill(-1);

  /** One tick that came `seconds` late, seen at `atMs` (a monotonic time in milliseconds). */
  record(seconds: number, atMs: number): void {
    if (!(seconds >= 0)) seconds = 0;
    let b = 0;
    while (b < LAG_BUCKETS.length && seconds > LAG_BUCKETS[b]) b++;
    this.buckets[b]++;
    this.sum += seconds;
    this.count++;
    const second = Math.floor(atMs / 1000);
    const slot = second % LAG_WINDOW_SECONDS;
    if (this.secondOfSlot[slot] !== second) {
      this.secondOfSlot[slot] = second;
      this.largestOfSecond[slot] = seconds;
    } else if (seconds > this.largestOfSecond[slot]) {
      this.largestOfSecond[slot] = seconds;
    }
  }

  /** The largest delay seen in the `LAG_WINDOW_SECONDS` seconds up to `atMs`; 0 when none was. */
  largestRecent(atMs: number): number {
    const now = Math.floor(atMs / 1000);
    let largest = 0;
    for (let slot = 0; slot < LAG_WINDOW_SECONDS; slot++) {
      const second = this.secondOfSlot[slot];
      if (second > now - LAG_WINDOW_SECONDS && second <= now && this.largestOfSecond[slot] > largest) largest = this.largestOfSecond[slot];
    }
    return largest;
  }
}

/**
 * The process's one watch: the event loop is the process's, so every instance's metrics (an edge opens one per
 * snapshot it swaps to) share it and its history. The timer runs while at least one holder has it, unref'd.
 */
class EventLoopWatch {
  readonly recorder = new LagRecorder();
  private holders = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private last = 0;

  hold(): void {
    if (this.holders++ > 0) return;
    this.last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      this.recorder.record(Math.max(0, now - this.last - LAG_TICK_MS) / 1000, now);
      this.last = now;
    }, LAG_TICK_MS);
    this.timer.unref?.();
  }

  /**
   * How late the tick now due is, in seconds: a scrape answered at the end of a long hold can run before the timer
   * that would record it, and must not report a quiet minute.
   */
  lateNow(): number {
    return this.timer === null ? 0 : Math.max(0, performance.now() - this.last - LAG_TICK_MS) / 1000;
  }

  release(): void {
    if (this.holders === 0 || --this.holders > 0) return;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}

const watch = new EventLoopWatch();

/** Starts (or joins) the process's event-loop watch; the returned function leaves it (once). */
export function holdEventLoopWatch(): { recorder: LagRecorder; lateNow: () => number; release: () => void } {
  watch.hold();
  let released = false;
  return {
    recorder: watch.recorder,
    lateNow: () => watch.lateNow(),
    release: () => {
      if (released) return;
      released = true;
      watch.release();
    },
  };
}
