// Long work split into steps, with a turn of the event loop between two so requests are served meanwhile (the
// scheduled jobs, the snapshot export). A stepped computation is a generator that yields between steps (see
// domain/steps.ts for running one at once).

import { TimedPace } from "../domain/pace";

/** The longest a step run between two turns may take, whatever its units (a slow or loaded machine). */
export const STEP_BUDGET_MS = 5;

/** The pace of a computation run in turns: `units` a step, or STEP_BUDGET_MS, whichever ends first. */
export const loopPace = (units: number): TimedPace => new TimedPace(units, STEP_BUDGET_MS, () => performance.now());

/** A turn of the event loop: I/O callbacks (requests) run before the promise resolves. */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs a stepped computation with a turn of the event loop after each step; resolves to its result. */
export async function inTurns<T>(steps: Generator<void, T>): Promise<T> {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    await nextTurn();
  }
}

/**
 * Runs a stepped computation over state that may change between turns (the index while requests write to it):
 * resolves to its result, or to null as soon as `unchanged()` says the state moved during a turn (the steps are
 * then dropped, never resumed over changed state).
 */
export async function inTurnsWhile<T>(steps: Generator<void, T>, unchanged: () => boolean): Promise<T | null> {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    await nextTurn();
    if (!unchanged()) return null;
  }
}
