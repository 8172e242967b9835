// How long an edge's forwarder waits before trying its primary again after failed attempts (contract 18: at
// most 30 s between attempts, so a primary back after a day gets the queue within half a minute).

export const FORWARD_RETRY_MAX_MS = 30_000;
const FIRST_RETRY_MS = 1_000;

/** The wait after `failures` failed attempts in a row (≥ 1): 1, 2, 4, 8, 16, then 30 s. */
export function forwardRetryDelay(failures: number): number {
  return Math.min(FORWARD_RETRY_MAX_MS, FIRST_RETRY_MS * 2 ** Math.max(0, Math.min(failures - 1, 10)));
}
