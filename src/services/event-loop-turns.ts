// Long work split into steps, with a turn of the event loop between two so requests are served meanwhile (the
// scheduled jobs, the snapshot export). A stepped computation is a generator that yields between steps (see
// domain/steps.ts for running one at once).

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
