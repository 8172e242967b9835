// How long this process's event loop was held: a timer that notes the longest gap between its ticks. A server
// under test in the same process (the harness) holds it whenever it holds a request.

export interface EventLoopWatch {
  /** Stops the timer; the longest turn seen, in milliseconds. */
  stop(): number;
}

export function watchEventLoop(tickMs = 2): EventLoopWatch {
  let longestTurn = 0;
  let last = performance.now();
  const ticks = setInterval(() => {
    longestTurn = Math.max(longestTurn, performance.now() - last);
    last = performance.now();
  }, tickMs);
  return {
    stop() {
      clearInterval(ticks);
      return longestTurn;
    },
  };
}

/** Resolves `work` and counts the turns of the event loop other work got before it was done. */
export async function turnsTaken<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const count = () => {
    if (done) return;
    turns++;
    setImmediate(count);
  };
  setImmediate(count);
  const value = await work();
  done = true;
  return { value, turns };
}
