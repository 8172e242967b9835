// Long work split into steps, with a turn of the event loop between two so requests are served meanwhile (the
// scheduled jobs: detect-threats, verify, expire). A step is what runs between two yields of a generator.

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

/** Runs a stepped computation to its end at once (a caller that may block, a test). */
export function allAtOnce<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}
