// The work of a stepped computation (domain/steps.ts), counted in one place: a computation made of several loops
// spends every unit of work on one Pace and yields when a step is full, wherever the work was done. Loops that
// each counted their own would run the tail of one and the head of the next as one step.

export class Pace {
  protected done = 0;

  /** `step`: the units of work a step holds (Infinity: one step for everything, as when run at once). */
  constructor(private readonly step: number) {}

  /** Counts `units` of work; true when a step's worth has been done since the last true (time to yield). */
  spend(units = 1): boolean {
    this.done += units;
    if (this.done < this.step) return false;
    this.done = 0;
    return true;
  }
}

/** Units of work between two readings of the timer: a reading costs about what a few entries do. */
const UNITS_PER_TIME_CHECK = 64;

/**
 * A Pace whose step also ends after `budgetMs` of time (`now`: a monotonic timer, in ms), whichever comes first.
 * Units alone hold the loop as long as the machine is slow: the same 8,192 entries took 3 ms on a quiet box and
 * 30 ms on a loaded one. The step's time counts from its first unit, so the turn between two steps (requests being
 * served) is not charged to the next step.
 */
export class TimedPace extends Pace {
  private startedAt = Number.NaN;
  private sinceCheck = 0;

  constructor(
    step: number,
    private readonly budgetMs: number,
    private readonly now: () => number,
  ) {
    super(step);
  }

  override spend(units = 1): boolean {
    if (this.startedAt !== this.startedAt) this.startedAt = this.now();
    if (super.spend(units)) return this.endStep();
    this.sinceCheck += units;
    if (this.sinceCheck < UNITS_PER_TIME_CHECK) return false;
    this.sinceCheck = 0;
    if (this.now() - this.startedAt < this.budgetMs) return false;
    this.done = 0;
    return this.endStep();
  }

  private endStep(): true {
    this.startedAt = Number.NaN;
    this.sinceCheck = 0;
    return true;
  }
}
