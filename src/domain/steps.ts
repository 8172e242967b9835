// Long work written as a generator that yields between steps, so a caller can let the event loop turn between
// them (services/event-loop-turns.ts) or run it to its end at once (here: a caller that may block, a test).

/** Runs a stepped computation to its end at once and returns its result. */
export function allAtOnce<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}
