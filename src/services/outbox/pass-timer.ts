// The background pass of a durable outbox: what the webhook dispatcher (outbox → receivers) and an edge's
// forwarder (queued reports → the primary) share. Work waits in a table; a pass takes what is due. A timer looks
// for work every `intervalMs`, a producer's nudge asks for a pass as soon as the current work yields (so a new row
// goes out without waiting for the timer), and stop ends both. The timer alone never keeps a process alive.

export class PassTimer {
  private timer: ReturnType<typeof setInterval> | null = null;
  private nudged = false;
  private stopped = false;

  /** `pass` must not throw: it is called from a timer. */
  constructor(
    private readonly pass: () => void,
    private readonly intervalMs: number,
  ) {}

  /** Starts the timer and asks for a first pass; does nothing once stopped. */
  start(): void {
    if (this.stopped || this.timer) return;
    this.timer = setInterval(() => this.pass(), this.intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
    this.nudge();
  }

  get running(): boolean {
    return this.timer !== null;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Asks for a pass as soon as the current work yields. Does nothing unless the timer runs. */
  nudge(): void {
    if (!this.timer || this.nudged) return;
    this.nudged = true;
    setImmediate(() => {
      this.nudged = false;
      if (!this.stopped) this.pass();
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
