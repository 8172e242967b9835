// The work of a stepped computation (domain/steps.ts), counted in one place: a computation made of several loops
// spends every unit of work on one Pace and yields when a step is full, wherever the work was done. Loops that
// each counted their own would run the tail of one and the head of the next as one step.

export class Pace {
  private done = 0;

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
