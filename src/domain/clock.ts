// Time is injected everywhere so jobs, decay, windows and rate limits are testable without waiting.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.parse("2026-11-21T08:00:00.000Z")) {}
  now(): number {
    return this.ms;
  }
  set(ms: number | string): void {
    this.ms = typeof ms === "string" ? Date.parse(ms) : ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export const isoTime = (ms: number): string => new Date(ms).toISOString();
